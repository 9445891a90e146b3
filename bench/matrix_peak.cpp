// kvf_matrix_peak: the CPU's matrix peak for each multiply kernel family kvfuse has (matrix_peak.h), one line per
// kernel or --json. Compiled into kvf_prefill_bench as well (without main, KVF_MATRIX_PEAK_MAIN undefined), which
// reports its achieved FLOP/s as a share of the peak of the kernel it runs.
#include "matrix_peak.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <immintrin.h>
#include <thread>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

#ifdef KVF_MATRIX_PEAK_MAIN
#include <CLI/CLI.hpp>
#endif

namespace kvf::bench {
namespace {

// Each loop returns the FLOPs it did (a multiply-add counts 2). Accumulators and inputs stay in registers, zeroed
// first (no denormals); the loops are written in assembly so that no compiler folds the invariant products.
#define KVF_R6(M, a, b, c, d, e, f) M(a) M(b) M(c) M(d) M(e) M(f)
#define KVF_Y_ZERO(i) "vxorps %%ymm" #i ", %%ymm" #i ", %%ymm" #i "\n\t"
#define KVF_Y_FMA(i) "vfmadd231ps %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define KVF_Y_MADD(i) "vpmaddwd %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define KVF_Z_ZERO(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define KVF_Z_FMA(i) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #i "\n\t"
#define KVF_Z_DP(i) "vdpbf16ps %%zmm30, %%zmm31, %%zmm" #i "\n\t"
#define KVF_Z_WSSD(i) "vpdpwssd %%zmm30, %%zmm31, %%zmm" #i "\n\t"

// The clock: a chain of dependent register adds, one per cycle on every x86 core (32 per loop pass).
uint64_t add_chain_cycles(int64_t iters) {
  uint64_t x = 0, one = 1;
  int64_t n = iters;
#define KVF_ADD4 "add %2, %1\n\tadd %2, %1\n\tadd %2, %1\n\tadd %2, %1\n\t"
  asm volatile(
      "1:\n\t" KVF_ADD4 KVF_ADD4 KVF_ADD4 KVF_ADD4 KVF_ADD4 KVF_ADD4 KVF_ADD4 KVF_ADD4
      "dec %0\n\t"
      "jnz 1b\n\t"
      : "+r"(n), "+r"(x)
      : "r"(one)
      : "cc");
#undef KVF_ADD4
  return 32 * (uint64_t)iters + (x & 0);
}

}  // namespace
}  // namespace kvf::bench

KVF_ISA_BEGIN("avx2,fma")
namespace kvf::bench {
namespace {

// 24 vfmadd231ps ymm per pass into 12 accumulators (latency 4-5 x 2 ports needs 8-10): 24 x 8 x 2 FLOPs.
double avx2_f32(int64_t iters) {
  int64_t n = iters;
  asm volatile(KVF_R6(KVF_Y_ZERO, 0, 1, 2, 3, 4, 5) KVF_R6(KVF_Y_ZERO, 6, 7, 8, 9, 10, 11)
                   KVF_Y_ZERO(12) KVF_Y_ZERO(13)
               "1:\n\t" KVF_R6(KVF_Y_FMA, 0, 1, 2, 3, 4, 5) KVF_R6(KVF_Y_FMA, 6, 7, 8, 9, 10, 11)
                   KVF_R6(KVF_Y_FMA, 0, 1, 2, 3, 4, 5) KVF_R6(KVF_Y_FMA, 6, 7, 8, 9, 10, 11)
               "dec %0\n\t"
               "jnz 1b\n\t"
               "vzeroupper\n\t"
               : "+r"(n)
               :
               : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                 "xmm11", "xmm12", "xmm13");
  return 24.0 * 8 * 2 * (double)iters;
}

// avx2-int16's inner step: vpmaddwd (16 products of 16-bit integers summed in pairs) then vpaddd into 32-bit sums,
// 12 of each per pass over 6 accumulators: 12 x 16 multiply-adds x 2.
double avx2_int16(int64_t iters) {
  int64_t n = iters;
#define KVF_Y_ADD(i, t) "vpaddd %%ymm" #t ", %%ymm" #i ", %%ymm" #i "\n\t"
#define KVF_Y_STEP(i, t) KVF_Y_MADD(t) KVF_Y_ADD(i, t)
  asm volatile(KVF_R6(KVF_Y_ZERO, 0, 1, 2, 3, 4, 5) KVF_R6(KVF_Y_ZERO, 6, 7, 8, 9, 10, 11)
                   KVF_Y_ZERO(12) KVF_Y_ZERO(13)
               "1:\n\t" KVF_Y_STEP(0, 6) KVF_Y_STEP(1, 7) KVF_Y_STEP(2, 8) KVF_Y_STEP(3, 9) KVF_Y_STEP(4, 10)
                   KVF_Y_STEP(5, 11) KVF_Y_STEP(0, 6) KVF_Y_STEP(1, 7) KVF_Y_STEP(2, 8) KVF_Y_STEP(3, 9)
                       KVF_Y_STEP(4, 10) KVF_Y_STEP(5, 11)
               "dec %0\n\t"
               "jnz 1b\n\t"
               "vzeroupper\n\t"
               : "+r"(n)
               :
               : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                 "xmm11", "xmm12", "xmm13");
#undef KVF_Y_STEP
#undef KVF_Y_ADD
  return 12.0 * 16 * 2 * (double)iters;
}

}  // namespace
}  // namespace kvf::bench
KVF_ISA_END

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,fma")
namespace kvf::bench {
namespace {

// n passes of 24 STEP(i) into 24 zmm accumulators, zeroed first, from zmm30 and zmm31 (zeroed too).
#define KVF_Z_PASSES(STEP, n)                                                                                    \
  asm volatile(KVF_R6(KVF_Z_ZERO, 0, 1, 2, 3, 4, 5) KVF_R6(KVF_Z_ZERO, 6, 7, 8, 9, 10, 11)                       \
                   KVF_R6(KVF_Z_ZERO, 12, 13, 14, 15, 16, 17) KVF_R6(KVF_Z_ZERO, 18, 19, 20, 21, 22, 23)         \
                       KVF_Z_ZERO(30) KVF_Z_ZERO(31)                                                             \
               "1:\n\t" KVF_R6(STEP, 0, 1, 2, 3, 4, 5) KVF_R6(STEP, 6, 7, 8, 9, 10, 11)                         \
                   KVF_R6(STEP, 12, 13, 14, 15, 16, 17) KVF_R6(STEP, 18, 19, 20, 21, 22, 23)                     \
               "dec %0\n\t"                                                                                      \
               "jnz 1b\n\t"                                                                                      \
               "vzeroupper\n\t"                                                                                  \
               : "+r"(n)                                                                                         \
               :                                                                                                 \
               : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
                 "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",       \
                 "xmm21", "xmm22", "xmm23", "xmm30", "xmm31")

// 24 vfmadd231ps zmm per pass: 24 x 16 x 2 FLOPs.
double avx512_f32(int64_t iters) {
  int64_t n = iters;
  KVF_Z_PASSES(KVF_Z_FMA, n);
  return 24.0 * 16 * 2 * (double)iters;
}

// 24 vdpbf16ps zmm per pass (32 bf16 products summed in pairs into 16 f32): 24 x 32 x 2 FLOPs.
double avx512_bf16(int64_t iters) {
  int64_t n = iters;
  KVF_Z_PASSES(KVF_Z_DP, n);
  return 24.0 * 32 * 2 * (double)iters;
}

// The integer dot products' step (int_dot_columns_avx512.cpp: decoding and short passes with AVX-512 VNNI): 24
// vpdpwssd zmm per pass (32 products of 16-bit integers summed in pairs into 16 32-bit sums): 24 x 32 x 2.
double avx512_vnni(int64_t iters) {
  int64_t n = iters;
  KVF_Z_PASSES(KVF_Z_WSSD, n);
  return 24.0 * 32 * 2 * (double)iters;
}
#undef KVF_Z_PASSES

}  // namespace
}  // namespace kvf::bench
KVF_ISA_END

KVF_ISA_BEGIN("amx-tile,amx-bf16")
namespace kvf::bench {
namespace {

struct alignas(64) PeakTileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The AMX kernel's micro tile: 4 accumulator tiles (16 x 16 f32) from 2 A and 2 B tiles, 4 tdpbf16ps per pass,
// each 16 x 16 outputs x 32 bf16 products x 2 FLOPs. The tiles are zeroed, loaded from nowhere.
double amx_bf16(int64_t iters) {
  PeakTileConfig config;
  for (int t = 0; t < 8; ++t) config.colsb[t] = 64, config.rows[t] = 16;
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return 4.0 * 16 * 16 * 32 * 2 * (double)iters;
}

}  // namespace
}  // namespace kvf::bench
KVF_ISA_END

namespace kvf::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `body(iters)` on `threads` threads released together; the wall time from release to the last one's end, and each
// thread's own time.
double run_on_threads(int threads, int64_t iters, const std::function<void(int64_t)>& body,
                      std::vector<double>* own = nullptr) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> per(threads, 0.0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const auto t0 = std::chrono::steady_clock::now();
      body(iters);
      per[t] = seconds_since(t0);
    });
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double wall = seconds_since(t0);
  if (own) *own = per;
  return wall;
}

// Iterations of `body` that take about `seconds` on one thread.
int64_t calibrate(const std::function<void(int64_t)>& body, double seconds) {
  int64_t iters = 1000;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    body(iters);
    const double s = seconds_since(t0);
    if (s > 0.02 || iters > (int64_t{1} << 40)) return std::max<int64_t>(1, (int64_t)(iters * seconds / s));
    iters *= 8;
  }
}

struct PeakLoop {
  const char* kernel;
  const char* op;
  double (*loop)(int64_t);
};

}  // namespace

const KernelPeak* MatrixPeak::find(const std::string& kernel) const {
  for (const KernelPeak& k : kernels)
    if (k.kernel == kernel) return &k;
  return nullptr;
}

nlohmann::json MatrixPeak::to_json() const {
  nlohmann::json ks = nlohmann::json::array();
  for (const KernelPeak& k : kernels)
    ks.push_back({{"kernel", k.kernel},
                  {"op", k.op},
                  {"gflops", k.gflops},
                  {"flop_per_cycle_per_core", k.flop_per_cycle_per_core}});
  return {{"cpu", cpu_model}, {"cpu_flags", cpu_flags}, {"threads", threads}, {"ghz", ghz}, {"kernels", ks}};
}

MatrixPeak measure_matrix_peak(int threads, double seconds, const std::vector<std::string>& only) {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  MatrixPeak out;
  out.cpu_model = f.model;
  out.cpu_flags = f.flags();
  out.threads = threads;
  std::vector<PeakLoop> loops;
  if (f.avx2_fma) {
    loops.push_back({"avx2-f32", "vfmadd231ps ymm", avx2_f32});
    loops.push_back({"avx2-int16", "vpmaddwd+vpaddd ymm", avx2_int16});
  }
  if (f.avx512) loops.push_back({"avx512-f32", "vfmadd231ps zmm", avx512_f32});
  if (f.avx512 && f.avx512_bf16) loops.push_back({"avx512-bf16", "vdpbf16ps zmm", avx512_bf16});
  if (f.avx512 && f.avx512_vnni) loops.push_back({"avx512-vnni", "vpdpwssd zmm", avx512_vnni});
  // amx_bf16_usable() also asks Linux for the tile state of this process, which the loop needs.
  const bool wants_amx = only.empty() || std::find(only.begin(), only.end(), "amx-bf16") != only.end();
  if (f.amx_bf16 && wants_amx && cpu::amx_bf16_usable()) loops.push_back({"amx-bf16", "tdpbf16ps", amx_bf16});

  // The clock, on all threads at once (the clock the kernels below see, not one core's boost).
  const std::function<void(int64_t)> chain = [](int64_t n) { add_chain_cycles(n); };
  // Each thread's own rate, best of five short runs: time another process takes from a thread only lowers it.
  const int64_t chain_iters = calibrate(chain, seconds / 4);
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<double> own;
    run_on_threads(threads, chain_iters, chain, &own);
    std::sort(own.begin(), own.end());  // the median thread of the run
    out.ghz = std::max(out.ghz, 32.0 * (double)chain_iters / own[own.size() / 2] / 1e9);
  }

  for (const PeakLoop& l : loops) {
    if (!only.empty() && std::find(only.begin(), only.end(), l.kernel) == only.end()) continue;
    double flops_per_thread = 0;
    const std::function<void(int64_t)> body = [&](int64_t n) { flops_per_thread = l.loop(n); };
    const int64_t iters = calibrate(body, seconds);
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const double wall = run_on_threads(threads, iters, body);
      best = std::max(best, flops_per_thread * threads / wall);
    }
    KernelPeak k;
    k.kernel = l.kernel;
    k.op = l.op;
    k.gflops = best / 1e9;
    k.flop_per_cycle_per_core = best / (threads * out.ghz * 1e9);
    out.kernels.push_back(k);
  }
  return out;
}

std::string peak_kernel_for(const std::string& compute) {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  if (compute == "f32") return f.avx512 ? "avx512-f32" : "avx2-f32";
  switch (cpu::active_gemm_kernel()) {
    case cpu::GemmKernel::AmxBf16: return "amx-bf16";
    case cpu::GemmKernel::Avx512Bf16: return "avx512-bf16";
    case cpu::GemmKernel::Avx2Int16: return "avx2-int16";
    case cpu::GemmKernel::Avx2F32: return "avx2-f32";
  }
  return "avx2-f32";
}

}  // namespace kvf::bench

#ifdef KVF_MATRIX_PEAK_MAIN
int main(int argc, char** argv) {
  CLI::App app{"kvf_matrix_peak: the CPU's measured matrix peak for each multiply kernel kvfuse has"};
  int threads = (int)std::max(1u, std::thread::hardware_concurrency());
  double seconds = 0.2;
  std::vector<std::string> only;
  bool json = false;
  app.add_option("--threads", threads, "threads, all running the loop at once (default: every logical CPU)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "about how long each of the three timed runs of a kernel takes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--kernel", only, "only these: avx2-f32 avx2-int16 avx512-f32 avx512-bf16 avx512-vnni amx-bf16");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  try {
    const kvf::bench::MatrixPeak peak = kvf::bench::measure_matrix_peak(threads, seconds, only);
    if (json) {
      std::printf("%s\n", peak.to_json().dump().c_str());
      return 0;
    }
    std::printf("CPU: %s (%s), %d threads at %.2f GHz (measured: dependent adds, all threads at once)\n",
                peak.cpu_model.c_str(), peak.cpu_flags.c_str(), peak.threads, peak.ghz);
    for (const kvf::bench::KernelPeak& k : peak.kernels)
      std::printf("%-12s %-20s %9.1f GFLOP/s = %5.1f FLOP/cycle/core x %d threads x %.2f GHz\n", k.kernel.c_str(),
                  k.op.c_str(), k.gflops, k.flop_per_cycle_per_core, peak.threads, peak.ghz);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
#endif
