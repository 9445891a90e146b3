// kvf_attention_bench: one backend's attention op alone, as a sparse prefill calls it: M keys at positions 0..M-1,
// and the query rows of a recompute ratio at scattered positions (each reads the keys at or before its own
// position, GQA, no mask built). Prints the median time per ratio, its speedup over ratio 1 (every row, the dense
// causal prefill's attention) and the rate in TFLOP/s of the causal work done. With --probe-rows, each ratio is also
// timed with its last rows probed (the column sums of their softmax weights that fusion's selection reads).
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "common/cli.h"
#include "core/error.h"

namespace {

struct Shape {
  int64_t context, heads, kv_heads, head_dim;
};

// `count` distinct positions of [0, context), sorted; ratio 1 gives every position.
std::vector<int32_t> recompute_positions(int64_t context, int64_t count, std::mt19937& rng) {
  std::vector<int32_t> all((size_t)context);
  std::iota(all.begin(), all.end(), 0);
  if (count < context) std::shuffle(all.begin(), all.end(), rng);
  all.resize((size_t)count);
  std::sort(all.begin(), all.end());
  return all;
}

kvf::Tensor upload(kvf::Backend& b, kvf::DType t, const kvf::Shape& shape, const void* data) {
  kvf::Tensor x = b.empty(t, shape);
  b.copy_from_host(x, data, x.nbytes());
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_attention_bench: the attention op of a sparse prefill, by recompute ratio"};
  std::string backend_name = "cpu";
  Shape s{8192, 28, 4, 128};
  std::vector<double> ratios{0.05, 0.15, 0.3, 1.0};
  int runs = 5, threads = 0, probe_rows = 0;
  bool bf16 = false, json = false;
  app.add_option("--backend", backend_name, "cpu | cuda")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--context", s.context, "keys (positions 0..context-1)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--heads", s.heads, "query heads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--kv-heads", s.kv_heads, "key/value heads (GQA)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--head-dim", s.head_dim, "values per head")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--ratios", ratios, "recompute ratios: query rows = ratio x context")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--runs", runs, "timed runs per ratio (after one warm-up)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "CPU worker threads (0: every core)")->capture_default_str();
  app.add_option("--probe-rows", probe_rows,
                 "also time each ratio with its last N query rows probed (fusion's selection: the question's rows)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--bf16", bf16, "the fast compute mode: Q, K, weights and V rounded to bf16 where the backend can");
  app.add_flag("--json", json, "print one JSON object per ratio");
  app.footer(
      "Examples (Qwen2.5-7B's attention shape):\n"
      "  kvf_attention_bench --context 4096 --ratios 0.15,1 --bf16\n"
      "  kvf_attention_bench --backend cuda --context 32768 --json\n"
      "  kvf_attention_bench --backend cuda --context 27000 --ratios 0.00137 --probe-rows 37 --bf16  "
      "# a selection pass's probe layer\n");
  app.callback([&] {
    KVF_CHECK(s.heads % s.kv_heads == 0, "--heads ", s.heads, " must be a multiple of --kv-heads ", s.kv_heads);
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, kvf::cli::thread_count(threads));
    auto backend = kvf::make_backend(backend_name);
    kvf::Backend& b = *backend;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto random = [&](int64_t n) {
      std::vector<float> v((size_t)n);
      for (float& x : v) x = normal(rng);
      return v;
    };
    const int64_t row = s.kv_heads * s.head_dim;
    const std::vector<float> k = random(s.context * row), v = random(s.context * row);
    std::vector<int32_t> key_pos((size_t)s.context);
    std::iota(key_pos.begin(), key_pos.end(), 0);
    kvf::AttentionArgs a;
    a.k = upload(b, kvf::DType::F32, {s.context, s.kv_heads, s.head_dim}, k.data());
    a.v = upload(b, kvf::DType::F32, {s.context, s.kv_heads, s.head_dim}, v.data());
    a.k_pos = upload(b, kvf::DType::I32, {s.context}, key_pos.data());
    a.scale = 1.0f / std::sqrt((float)s.head_dim);
    a.bf16_inputs = bf16;
    double dense_ms = 0;
    std::sort(ratios.begin(), ratios.end(), std::greater<>());  // ratio 1 first: the others' reference
    for (double ratio : ratios) {
      const int64_t n = std::max<int64_t>(1, (int64_t)std::llround(ratio * (double)s.context));
      const std::vector<int32_t> pos = recompute_positions(s.context, n, rng);
      const std::vector<float> q = random(n * s.heads * s.head_dim);
      a.q = upload(b, kvf::DType::F32, {n, s.heads, s.head_dim}, q.data());
      a.q_pos = upload(b, kvf::DType::I32, {n}, pos.data());
      a.out = b.empty(kvf::DType::F32, {n, s.heads, s.head_dim});
      const auto median_ms = [&] {
        std::vector<double> ms;
        std::vector<float> first_row((size_t)(s.heads * s.head_dim));
        for (int r = 0; r <= runs; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          b.attention(a);
          b.copy_to_host(a.out.rows(0, 1), first_row.data(), first_row.size() * 4);  // waits for the device
          const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (r > 0) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
      };
      const double median = median_ms();
      double probe_median = NAN;
      if (probe_rows > 0) {
        std::vector<int32_t> probed((size_t)std::min<int64_t>(probe_rows, n));
        std::iota(probed.begin(), probed.end(), (int32_t)(n - (int64_t)probed.size()));
        const std::vector<float> zeros((size_t)s.context, 0.0f);
        a.probe_rows = upload(b, kvf::DType::I32, {(int64_t)probed.size()}, probed.data());
        a.probe_colsum = upload(b, kvf::DType::F32, {s.context}, zeros.data());
        probe_median = median_ms();
        a.probe_rows = kvf::Tensor(), a.probe_colsum = kvf::Tensor();
      }
      if (ratio == 1.0) dense_ms = median;
      // Causal work: each query row reads pos + 1 keys; QK and PV are 2 flops per multiply-add each.
      double keys_read = 0;
      for (int32_t p : pos) keys_read += p + 1;
      const double tflops = 4.0 * keys_read * (double)(s.heads * s.head_dim) / (median * 1e-3) / 1e12;
      const double speedup = dense_ms > 0 ? dense_ms / median : NAN;
      if (json) {
        std::printf("%s\n", nlohmann::json({{"backend", backend_name}, {"context", s.context}, {"heads", s.heads},
                                            {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim}, {"bf16", bf16},
                                            {"ratio", ratio}, {"query_rows", n}, {"median_ms", median},
                                            {"speedup_vs_dense", speedup}, {"tflops", tflops},
                                            {"probe_rows", probe_rows > 0 ? std::min<int64_t>(probe_rows, n) : 0},
                                            {"probed_median_ms", std::isnan(probe_median)
                                                                     ? nlohmann::json()
                                                                     : nlohmann::json(probe_median)}})
                                .dump()
                                .c_str());
      } else {
        std::printf("ratio %.2f: %6lld query rows over %lld keys: median %9.2f ms (%d runs), %5.2fx ratio 1, "
                    "%.3f TFLOP/s\n",
                    ratio, (long long)n, (long long)s.context, median, runs, speedup, tflops);
        if (!std::isnan(probe_median))
          std::printf("  with its last %lld rows probed: median %9.2f ms\n",
                      (long long)std::min<int64_t>(probe_rows, n), probe_median);
      }
    }
  });
  return kvf::cli::run_app(app, argc, argv);
}
