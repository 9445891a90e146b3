// kvfuse's compact-weight matmuls against oneDNN's on the same shapes, side by side in one process: one
// transformer layer's projections of Qwen2.5-0.5B (QKV fused, O, gate|up fused, down) for a batch of rows, weights
// random. oneDNN multiplies bf16 activations with bf16 weights it has reordered into its own blocked layout at
// setup (untimed); the f32 -> bf16 conversion of the activations is timed, as kvfuse's is. On CPUs without
// AVX-512 BF16, where oneDNN has no bf16 matmul, it multiplies in f32 instead (--onednn-type). kvfuse runs with
// bf16 weights and with Q8_0 weights as a GGUF stores them (integer dot products for a few rows, its panels beyond).
// Prints a markdown table: median ms per layer and GFLOP/s. oneDNN runs on OpenMP (Debian's build), kvfuse on TBB,
// each with --threads workers, kvfuse first so that OpenMP's waiting workers do not share its cores. Run it on an
// otherwise idle machine: OpenMP's spinning workers lose most of their speed when a core is taken.
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dnnl.hpp>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/packed_matmul.h"
#include "core/ggml_types.h"
#include "core/half.h"

extern "C" void omp_set_num_threads(int);  // libgomp, oneDNN's threading runtime here

namespace {

struct Shape {
  const char* name;
  int64_t k, m;
};
// Qwen2.5-0.5B: hidden 896, 14 query heads and 2 kv heads of 64, MLP 4864.
constexpr Shape kLayer[] = {{"qkv", 896, 1152}, {"o", 896, 896}, {"gate|up", 896, 9728}, {"down", 4864, 896}};

double median_ms(int runs, const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::vector<float> random_values(int64_t count, float sd, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v((size_t)count);
  for (float& x : v) x = d(rng);
  return v;
}

// A weight [m, k] of type t holding `values` (rounded to t).
kvf::Tensor weight_tensor(kvf::Backend& b, kvf::DType t, int64_t m, int64_t k, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(kvf::dtype_bytes(t, k) * (size_t)m);
  for (int64_t r = 0; r < m; ++r) {
    uint8_t* dst = bytes.data() + r * kvf::dtype_bytes(t, k);
    if (t == kvf::DType::BF16) {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = kvf::f32_to_bf16(values[r * k + i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      kvf::quantize_row(kvf::ggml_type_of(t), values.data() + r * k, dst, k);
    }
  }
  kvf::Tensor w = b.empty(t, {m, k});
  b.copy_from_host(w, bytes.data(), bytes.size());
  return w;
}

// One layer's products with oneDNN: weights reordered once, activations converted and multiplied per call.
// Activations and weights in `type` (bf16 or f32); the activations' conversion from f32 is part of every run.
class OnednnLayer {
 public:
  OnednnLayer(int64_t n, const std::vector<std::vector<float>>& weights, const std::vector<float>& x,
              dnnl::memory::data_type type)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    for (size_t i = 0; i < std::size(kLayer); ++i) {
      const int64_t k = kLayer[i].k, m = kLayer[i].m;
      Product p;
      p.src_f32 = dnnl::memory({{n, k}, dt::f32, tag::ab}, engine_, const_cast<float*>(x.data()));
      p.src = dnnl::memory({{n, k}, type, tag::ab}, engine_);
      p.convert = dnnl::reorder(p.src_f32, p.src);
      const dnnl::memory::desc any_weights({k, m}, type, tag::any);
      const dnnl::matmul::primitive_desc pd(
          dnnl::matmul::desc(p.src.get_desc(), any_weights, dnnl::memory::desc({n, m}, dt::f32, tag::ab)), engine_);
      // kvfuse's [m, k] row-major weight is oneDNN's [k, m] in layout "ba".
      std::vector<uint16_t> bf16(type == dt::bf16 ? (size_t)(m * k) : 0);
      for (size_t j = 0; j < bf16.size(); ++j) bf16[j] = kvf::f32_to_bf16(weights[i][j]);
      dnnl::memory plain = type == dt::bf16
                               ? dnnl::memory({{k, m}, dt::bf16, tag::ba}, engine_, bf16.data())
                               : dnnl::memory({{k, m}, dt::f32, tag::ba}, engine_, const_cast<float*>(weights[i].data()));
      p.weights = dnnl::memory(pd.weights_desc(), engine_);
      dnnl::reorder(plain, p.weights).execute(stream_, plain, p.weights);
      p.dst = dnnl::memory(pd.dst_desc(), engine_);
      p.matmul = dnnl::matmul(pd);
      products_.push_back(std::move(p));
    }
    stream_.wait();
  }

  void run() {
    for (Product& p : products_) {
      p.convert.execute(stream_, p.src_f32, p.src);
      p.matmul.execute(stream_, {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, p.dst}});
    }
    stream_.wait();
  }

 private:
  struct Product {
    dnnl::memory src_f32, src, weights, dst;
    dnnl::reorder convert;
    dnnl::matmul matmul;
  };
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<Product> products_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_onednn_bench: kvfuse's matmul kernels against oneDNN on one Qwen2.5-0.5B layer"};
  std::vector<int64_t> rows = {1, 4, 128, 512};
  int threads = 2, runs = 9;
  std::string onednn_type = "auto";
  app.add_option("--rows", rows, "batch sizes (rows of activations)")->capture_default_str();
  app.add_option("--threads", threads, "worker threads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "timed runs (after one warm-up)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--onednn-type", onednn_type,
                 "oneDNN's activation and weight type: bf16, f32, or auto (bf16 where the CPU has AVX-512 BF16, "
                 "f32 otherwise: oneDNN has no bf16 matmul without it)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bf16", "f32"}));
  CLI11_PARSE(app, argc, argv);
  try {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    omp_set_num_threads(threads);
    auto backend = kvf::make_cpu_backend();
    std::mt19937 rng(7);
    std::vector<std::vector<float>> values;
    std::vector<kvf::Tensor> bf16, q8;
    double flops_per_row = 0;
    for (const Shape& s : kLayer) {
      values.push_back(random_values(s.m * s.k, 0.05f, rng));
      bf16.push_back(weight_tensor(*backend, kvf::DType::BF16, s.m, s.k, values.back()));
      q8.push_back(weight_tensor(*backend, kvf::DType::Q8_0, s.m, s.k, values.back()));
      flops_per_row += 2.0 * (double)(s.m * s.k);
    }
    const kvf::cpu::CpuFeatures& cpu = kvf::cpu::cpu_features();
    if (onednn_type == "auto") onednn_type = cpu.avx512_bf16 ? "bf16" : "f32";
    const auto dnnl_type = onednn_type == "bf16" ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    std::printf("CPU: %s (%s); %d threads; kvfuse kernel %s; oneDNN %d.%d.%d in %s\n\n", cpu.model.c_str(),
                cpu.flags().c_str(), threads, kvf::cpu::gemm_kernel_name(kvf::cpu::active_gemm_kernel()),
                dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, onednn_type.c_str());
    const char* t = onednn_type.c_str();
    std::printf("| rows | oneDNN %s ms | kvfuse bf16 ms | kvfuse Q8_0 ms | oneDNN / kvfuse bf16 | oneDNN / kvfuse Q8_0 |"
                " kvfuse bf16 GFLOP/s | oneDNN %s GFLOP/s |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n",
                t, t);
    // Every kvfuse measurement first: OpenMP's workers keep spinning for a while after each oneDNN call.
    std::vector<std::vector<float>> inputs;
    std::vector<double> ms_bf16, ms_q8, ms_dnnl;
    for (const int64_t n : rows) {
      inputs.push_back(random_values(n * 4864, 1.0f, rng));
      std::vector<float> y((size_t)(n * 9728));
      const auto kvfuse_layer = [&](const std::vector<kvf::Tensor>& w) {
        for (size_t i = 0; i < w.size(); ++i)
          kvf::cpu::packed_matmul(inputs.back().data(), n, kLayer[i].k, w[i], y.data());
      };
      ms_bf16.push_back(median_ms(runs, [&] { kvfuse_layer(bf16); }));
      ms_q8.push_back(median_ms(runs, [&] { kvfuse_layer(q8); }));
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      OnednnLayer onednn(rows[i], values, inputs[i], dnnl_type);
      ms_dnnl.push_back(median_ms(runs, [&] { onednn.run(); }));
    }
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("| %lld | %.3f | %.3f | %.3f | %.2f | %.2f | %.1f | %.1f |\n", (long long)rows[i], ms_dnnl[i],
                  ms_bf16[i], ms_q8[i], ms_dnnl[i] / ms_bf16[i], ms_dnnl[i] / ms_q8[i],
                  flops_per_row * (double)rows[i] / ms_bf16[i] * 1e-6,
                  flops_per_row * (double)rows[i] / ms_dnnl[i] * 1e-6);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
