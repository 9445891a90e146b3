// Prefill timing of kvfuse's decoder: N fixed-seed random tokens in one forward call (logits of the last row,
// KV returned as a real prefill keeps it), one warm-up then R timed runs; with --decode D also D greedy decode
// steps after such a prompt (R runs, median tokens/s). Prints one JSON object; driven by bench/cpu_vs_llamacpp.py
// for the side-by-side table against llama.cpp.
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/backend.h"
#include "backend/profiling_backend.h"
#include "io/model_paths.h"
#include "model/decoder.h"
#include "model/generate.h"

int main(int argc, char** argv) {
  CLI::App app{"kvf_prefill_bench: time one prefill of N tokens"};
  std::string model = "smollm2";
  int tokens = 512, threads = 2, runs = 5, decode = 0;
  std::string compute = "fast", backend_name = "cpu";
  bool json = false, profile = false;
  app.add_option("--model", model, "smollm2 or a GGUF path")->capture_default_str();
  app.add_option("--tokens", tokens, "prompt length")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "worker threads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--compute", compute, "fast (compact weights, the CPU's fastest kernels) or f32 (the reference)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "f32"}));
  app.add_option("--backend", backend_name, "where the model runs: cpu | cuda (built with nvcc, needs a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--runs", runs, "timed runs (after one warm-up)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--decode", decode, "also time this many greedy decode steps after the prompt (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--json", json, "print one JSON object");
  app.add_flag("--profile", profile, "also time every backend op (adds per-call overhead) and report the split");
  CLI11_PARSE(app, argc, argv);
  try {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    auto base = kvf::make_backend(backend_name);
    kvf::ProfilingBackend profiler(*base);
    kvf::Backend& backend = profile ? static_cast<kvf::Backend&>(profiler) : *base;
    auto decoder =
        kvf::Decoder::load(kvf::resolve_model(model), backend, kvf::compute_mode_from_name(compute));
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> id(0, decoder->config().vocab - 1);
    kvf::ForwardRequest req;
    for (int i = 0; i < tokens; ++i) {
      req.tokens.push_back(id(rng));
      req.positions.push_back(i);
    }
    req.logit_rows = {tokens - 1};
    req.return_kv = true;
    std::vector<double> secs;
    for (int r = 0; r <= runs; ++r) {
      if (r == 1) profiler.reset();  // the split covers the timed runs only
      const auto t0 = std::chrono::steady_clock::now();
      decoder->forward(req);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) secs.push_back(s);  // run 0 warms caches and the allocator
    }
    std::vector<double> sorted = secs;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                            : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
    // Decode: the prompt prefilled, then `decode` steps of one token over the growing buffer (no end token).
    std::vector<double> decode_tps;
    for (int r = 0; decode > 0 && r <= runs; ++r) {
      kvf::GreedyOptions g;
      g.max_new_tokens = decode + 1;  // the first token comes from the prefill
      const kvf::GreedyResult res = kvf::generate_greedy(*decoder, req.tokens, g);
      if (r > 0) decode_tps.push_back(decode / (res.decode_ms / 1000.0));
    }
    std::sort(decode_tps.begin(), decode_tps.end());
    const double decode_median = decode_tps.empty() ? 0.0 : decode_tps[decode_tps.size() / 2];
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [op, st] : profiler.stats())
      ops[op] = {{"seconds_per_run", st.seconds / runs}, {"calls_per_run", st.calls / runs}};
    if (json) {
      nlohmann::json out{{"tokens", tokens}, {"threads", threads}, {"compute", compute}, {"median_s", median},
                         {"runs_s", secs}};
      if (decode > 0) out["decode_tokens_per_s"] = decode_median;
      if (profile) out["ops"] = ops;
      std::printf("%s\n", out.dump().c_str());
    } else {
      std::printf("%d tokens, %d threads, %s: median %.4f s, %.1f tokens/s\n", tokens, threads, compute.c_str(),
                  median, tokens / median);
      if (decode > 0) std::printf("decode after %d tokens: %.1f tokens/s (median)\n", tokens, decode_median);
      for (const auto& [op, st] : profiler.stats())
        std::printf("  %-16s %8.4f s/run  %6.1f%%  %lld calls/run\n", op.c_str(), st.seconds / runs,
                    100.0 * st.seconds / runs / median, (long long)(st.calls / runs));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
