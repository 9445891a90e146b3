// The CPU's measured matrix peak: for each multiply kernel family kvfuse has (AVX2 f32 FMA, AVX2 16-bit integer
// vpmaddwd, AVX-512 f32 FMA, AVX-512 BF16 vdpbf16ps, AVX-512 VNNI 16-bit integer vpdpwssd, AMX BF16 tdpbf16ps), a
// loop of independent register-only multiply-adds on every thread at once, and the clock those threads run at (a
// dependent add chain: one add per cycle). bench/matrix_peak.cpp is both kvf_matrix_peak and, compiled into
// kvf_prefill_bench, this header's code.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvf::bench {

struct KernelPeak {
  std::string kernel;     // avx2-f32 | avx2-int16 | avx512-f32 | avx512-bf16 | avx512-vnni | amx-bf16
  std::string op;         // the instruction timed
  double gflops = 0;      // all threads together; a multiply-add counts 2 (also for 16-bit integers)
  double flop_per_cycle_per_core = 0;  // gflops / (threads x measured GHz)
};

struct MatrixPeak {
  std::string cpu_model;  // /proc/cpuinfo model name
  std::string cpu_flags;  // the features that decide kvfuse's kernels (cpu_features.h)
  int threads = 0;
  double ghz = 0;  // the median thread's clock while all threads ran the add chain (best of five runs)
  std::vector<KernelPeak> kernels;  // those this CPU (and process, for AMX) runs
  const KernelPeak* find(const std::string& kernel) const;
  nlohmann::json to_json() const;
};

// Measures every kernel this CPU has (or only those named in `only`), each for about `seconds` on `threads`
// threads, best of three.
MatrixPeak measure_matrix_peak(int threads, double seconds = 0.2, const std::vector<std::string>& only = {});

// The peak kernel that matches what a prefill of `compute` ("fast" or "f32") runs on this CPU: fast takes the
// matmul kernel of the CPU kernel table (cpu_kernels.h), f32 OpenBLAS's sgemm (avx512-f32 or avx2-f32).
std::string peak_kernel_for(const std::string& compute);

}  // namespace kvf::bench
