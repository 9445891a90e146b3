// Prefill timing of kvfuse's decoder: N fixed-seed random tokens in one forward call (logits of the last row,
// KV returned as a real prefill keeps it), one warm-up then R timed runs; with --decode D also D greedy decode
// steps after such a prompt (R runs, median tokens/s), and with --decode-batch B that many sequences, each after
// its own prompt, decoded together one token each per step. Prints one JSON object; driven by
// bench/cpu_vs_llamacpp.py for the side-by-side table against llama.cpp. The prefill's model FLOPs
// (model/model_flops.h) over its median time give the achieved TFLOP/s; on the CPU backend also their share of the
// CPU's measured peak (matrix_peak.h) for the matmul kernel the run uses, measured in-process after the timed runs
// on as many threads (--no-peak skips it). --stream-mb M only measures the memory's read bandwidth (no model), the
// bound a decode's weight bytes per token times tokens/s is set against.
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/profiling_backend.h"
#include "io/model_paths.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "model/model_flops.h"
#include "matrix_peak.h"

namespace {

// Prefills every prompt (untimed), then decodes `steps` greedy tokens for all of them together; generated tokens
// per second of the decode.
double batched_decode_rate(const kvf::Decoder& decoder, const std::vector<std::vector<int32_t>>& prompts,
                           int steps) {
  std::vector<kvf::PrefilledPrompt> prefilled;
  std::vector<kvf::DecodeJob> jobs(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    prefilled.push_back(kvf::prefill_prompt(decoder, prompts[i], steps + 1));
    jobs[i].own = prefilled.back().kv.get();
    jobs[i].first = prefilled.back().first;
    jobs[i].next_position = prefilled.back().next_position;
    jobs[i].options.max_new_tokens = steps + 1;  // the first token comes from the prefill
  }
  kvf::decode_greedy_batch(decoder, jobs);
  return (double)steps * (double)prompts.size() / (jobs[0].result.decode_ms / 1000.0);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Read bandwidth of this machine's memory, to set a decode's weight bytes per second against: `threads` workers
// each sum their share of a buffer of `bytes` (far larger than the caches), median GB/s of five passes after one.
double stream_read_gbs(size_t bytes, int threads) {
  std::vector<uint64_t> buffer(bytes / sizeof(uint64_t), 1);
  const size_t n = buffer.size(), share = (n + (size_t)threads - 1) / (size_t)threads;
  std::vector<uint64_t> sums((size_t)threads * 8);  // a cache line apart
  std::vector<double> gbs;
  for (int pass = 0; pass <= 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    tbb::parallel_for(0, threads, [&](int t) {
      const uint64_t* p = buffer.data() + std::min(n, (size_t)t * share);
      const size_t count = std::min(n, (size_t)(t + 1) * share) - std::min(n, (size_t)t * share);
      uint64_t a = 0, b = 0, c = 0, d = 0;
      for (size_t i = 0; i + 4 <= count; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
      }
      sums[(size_t)t * 8] = a + b + c + d;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) gbs.push_back((double)bytes / s / 1e9);
  }
  static volatile uint64_t sink;  // keeps the sums
  for (uint64_t v : sums) sink = sink + v;
  return median_of(gbs);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_prefill_bench: time one prefill of N tokens"};
  std::string model = "smollm2";
  int tokens = 512, threads = 2, runs = 5, decode = 0, decode_batch = 1;
  std::string compute = "fast", backend_name = "cpu";
  bool json = false, profile = false, no_peak = false;
  int stream_mb = 0;
  double peak_seconds = 0.1;
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
  app.add_option("--decode-batch", decode_batch,
                 "sequences decoded together, each after its own random prompt of --tokens ids (tokens/s counts "
                 "every sequence's tokens)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "print one JSON object");
  app.add_flag("--no-peak", no_peak, "skip the measurement of the CPU's matrix peak (the share of it reported)");
  app.add_option("--peak-seconds", peak_seconds, "about how long each of the peak's three timed runs takes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--stream-mb", stream_mb,
                 "only measure the memory's read bandwidth over a buffer of this many MB on --threads threads "
                 "(median GB/s of 5 passes), to compare a decode's weight bytes per second with; no model loaded")
      ->check(CLI::PositiveNumber);
  app.add_flag("--profile", profile, "also time every backend op (adds per-call overhead) and report the split");
  CLI11_PARSE(app, argc, argv);
  try {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    if (stream_mb > 0) {
      const double gbs = stream_read_gbs((size_t)stream_mb << 20, threads);
      if (json)
        std::printf("%s\n",
                    nlohmann::json{{"stream_mb", stream_mb}, {"threads", threads}, {"read_gbs", gbs}}.dump().c_str());
      else
        std::printf("memory read, %d MB on %d threads: %.2f GB/s (median of 5)\n", stream_mb, threads, gbs);
      return 0;
    }
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
    const double median = median_of(secs);
    // Model FLOPs of the prefill (logits of its last row), and the matrix peak of the kernel it ran.
    const kvf::PrefillFlops flops = kvf::prefill_flops(decoder->config(), tokens, 0, 1);
    const double tflops = flops.total / median / 1e12;
    const bool with_peak = backend_name == "cpu" && !no_peak;
    const std::string peak_kernel = backend_name == "cpu" ? kvf::bench::peak_kernel_for(compute) : "";
    kvf::bench::MatrixPeak peak;
    if (with_peak) peak = kvf::bench::measure_matrix_peak(threads, peak_seconds, {peak_kernel});
    const kvf::bench::KernelPeak* kernel_peak = with_peak ? peak.find(peak_kernel) : nullptr;
    const double peak_share = kernel_peak ? tflops * 1e3 / kernel_peak->gflops : 0.0;
    // Decode: each prompt prefilled, then `decode` steps of one token per sequence over its growing buffer (no end
    // token). The first prompt is the prefill's; the others are further ids of the same stream.
    std::vector<std::vector<int32_t>> prompts{req.tokens};
    while ((int)prompts.size() < decode_batch) {
      prompts.emplace_back();
      for (int i = 0; i < tokens; ++i) prompts.back().push_back(id(rng));
    }
    std::vector<double> decode_tps;
    for (int r = 0; decode > 0 && r <= runs; ++r) {
      const double rate = batched_decode_rate(*decoder, prompts, decode);
      if (r > 0) decode_tps.push_back(rate);
    }
    const double decode_median = decode_tps.empty() ? 0.0 : median_of(decode_tps);
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [op, st] : profiler.stats())
      ops[op] = {{"seconds_per_run", st.seconds / runs}, {"calls_per_run", st.calls / runs}};
    if (json) {
      nlohmann::json out{{"tokens", tokens}, {"threads", threads}, {"compute", compute}, {"median_s", median},
                         {"runs_s", secs}};
      out["model_flops"] = flops.total;
      out["matmul_flops"] = flops.matmul;
      out["attention_flops"] = flops.attention;
      out["tflops"] = tflops;
      if (kernel_peak) {
        out["cpu"] = peak.cpu_model;
        out["cpu_flags"] = peak.cpu_flags;
        out["ghz"] = peak.ghz;
        out["peak_kernel"] = peak_kernel;
        out["peak_gflops"] = kernel_peak->gflops;
        out["peak_share"] = peak_share;
      }
      if (decode > 0) {
        out["decode_tokens_per_s"] = decode_median;
        out["decode_batch"] = decode_batch;
      }
      if (profile) out["ops"] = ops;
      std::printf("%s\n", out.dump().c_str());
    } else {
      std::printf("%d tokens, %d threads, %s: median %.4f s, %.1f tokens/s\n", tokens, threads, compute.c_str(),
                  median, tokens / median);
      std::printf("model FLOPs %.3g (matmul %.3g, attention %.3g): %.4f TFLOP/s achieved", flops.total,
                  flops.matmul, flops.attention, tflops);
      if (kernel_peak)
        std::printf(", %.1f%% of %s's measured peak %.1f GFLOP/s (%s, %s; %d threads at %.2f GHz)\n",
                    100.0 * peak_share, peak_kernel.c_str(), kernel_peak->gflops, peak.cpu_model.c_str(),
                    peak.cpu_flags.c_str(), peak.threads, peak.ghz);
      else
        std::printf("\n");
      if (decode > 0)
        std::printf("decode of %d sequences after %d tokens each: %.1f tokens/s (median)\n", decode_batch, tokens,
                    decode_median);
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
