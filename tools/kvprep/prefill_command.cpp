#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "model/decoder.h"
#include "store/kv_shard.h"
#include "store_lock_option.h"
#include "io/model_paths.h"
#include "prep/store_model.h"
#include "prep/prefill_stage.h"
#include "prefill_command.h"

namespace kvf::cli {

void add_prefill_command(CLI::App& app) {
  // The defaults (and so --help's) are the library's: PrefillStageOptions.
  struct Args : StoreCommandOptions {
    PrefillStageOptions defaults;
    std::string model, mode = defaults.mode, system = defaults.system_message,
                       dtype = kv_dtype_name(defaults.dtype), compute = compute_mode_name(defaults.compute),
                       backend = defaults.backend, neighbor_order = neighbor_order_name(defaults.neighbor_order);
    int top_n = defaults.top_n, batch_tokens = defaults.batch_tokens;
    std::string entropy = h5::compression_name(defaults.entropy);
    bool refresh = defaults.refresh_changed_neighbors, anchor_scores = defaults.record_anchor_scores;
    double shard_mb = (double)defaults.shard_bytes / (1 << 20),
           neighbor_cache_mb = (double)defaults.neighbor_cache_bytes / (1 << 20);
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("prefill", "Compute and store every chunk's KV (store: kv/<mode>-NNNNN.h5)");
  cmd->footer(
      "Examples:\n"
      "  kvprep prefill --store stores/demo --mode independent\n"
      "  kvprep prefill --store stores/demo --mode similarity --top-n 10\n"
      "independent: each chunk after the system prompt alone (the Full Reuse cache). similarity: each chunk after\n"
      "the system prompt and its top-n neighbours' independent KV (FusionRAG's offline stage; run independent,\n"
      "embed, index and neighbors first). K is stored without RoPE. Shards are committed as they fill: a killed\n"
      "run resumes, and a rerun computes only chunks without KV.");
  a->add_store_option(cmd, "store directory");
  cmd->add_option("--model", a->model, kStoreModelHelp);
  cmd->add_option("--mode", a->mode, "independent or similarity")
      ->capture_default_str()
      ->check(CLI::IsMember({"independent", "similarity"}));
  cmd->add_option("--top-n", a->top_n, "similarity: neighbours in each chunk's context")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--neighbor-order", a->neighbor_order,
                  "similarity: best-first puts the most similar neighbour first (FusionRAG), best-last next to the "
                  "chunk (a store keeps one)")
      ->capture_default_str()
      ->check(accepted_by(neighbor_order_from_name));
  cmd->add_flag("--refresh-neighbors", a->refresh,
                "similarity: also recompute chunks whose neighbour list changed since their KV was stored");
  cmd->add_option("--system", a->system,
                  "system message of S (default: kvfuse's, asking for short answers; lib/text/rag_prompt.h)");
  cmd->add_option("--dtype", a->dtype, "stored KV type")->capture_default_str()->check(CLI::IsMember({"f16", "bf16"}));
  cmd->add_option("--compute", a->compute,
                  "fast: compact weights and the CPU's fastest kernels; f32: the reference math (a store keeps one)")
      ->capture_default_str()
      ->check(accepted_by(compute_mode_from_name));
  cmd->add_option("--backend", a->backend, "where the model runs: cpu | cuda (built with nvcc, needs a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--entropy", a->entropy,
                  "how shards keep K and V: none (fastest reads), deflate:1..9 or zstd:1..22 (byte-shuffled, then compressed)")
      ->capture_default_str()
      ->check(accepted_by([](const std::string& text) { return h5::parse_compression(text, "--entropy"); }));
  cmd->add_option("--batch-tokens", a->batch_tokens, "chunk tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--shard-mb", a->shard_mb, "KV per shard file, MB")
      ->capture_default_str()
      ->check(finite_in(1e-3, 1 << 20));
  cmd->add_option("--neighbor-cache-mb", a->neighbor_cache_mb,
                  "similarity: neighbours' independent KV kept in memory (on the GPU with --backend cuda), MiB")
      ->capture_default_str()
      ->check(finite_in(0, 1 << 24));
  cmd->add_flag("--anchor-scores", a->anchor_scores,
                "also record the attention each token receives, so `kvprep compress --anchors` needs no second pass");
  a->add_lock_and_common_options(cmd,
                                 "one JSON object: store, mode, unchanged, chunks, computed, tokens, stored_bytes, "
                                 "seconds, tokens_per_s, seconds_by_phase, ...");
  cmd->callback([a] {
    const StoreCommandScope scope(*a);
    PrefillStageOptions o;
    o.store_dir = a->store;
    o.model_path = resolve_model(model_for_store(a->model, a->store));
    o.mode = a->mode;
    o.top_n = a->top_n;
    o.neighbor_order = neighbor_order_from_name(a->neighbor_order);
    o.system_message = a->system;
    o.dtype = parse_kv_dtype(a->dtype, "--dtype");
    o.compute = compute_mode_from_name(a->compute);
    o.backend = a->backend;
    o.batch_tokens = a->batch_tokens;
    o.refresh_changed_neighbors = a->refresh;
    o.record_anchor_scores = a->anchor_scores;
    o.entropy = h5::parse_compression(a->entropy, "--entropy");
    o.shard_bytes = (uint64_t)(a->shard_mb * (1 << 20));
    o.neighbor_cache_bytes = (uint64_t)(a->neighbor_cache_mb * (1 << 20));
    const PrefillStageResult r = run_prefill_stage(o);
    if (a->common.json) {
      print_json({{"store", a->store},
                  {"mode", a->mode},
                  {"unchanged", r.unchanged},
                  {"chunks", r.chunks},
                  {"computed", r.computed},
                  {"tokens", r.tokens},
                  {"context_rows", r.context_rows},
                  {"shards_written", r.shards_written},
                  {"stored_bytes", r.stored_bytes},
                  {"anchor_scores_recorded", r.scored},
                  {"seconds", r.seconds},
                  {"tokens_per_s", r.seconds > 0 ? r.tokens / r.seconds : 0.0},
                  {"seconds_by_phase",
                   {{"model_load", r.load_seconds},
                    {"requests", r.view_seconds},
                    {"forward", r.forward_seconds},
                    {"read_back", r.readback_seconds},
                    {"store", r.store_seconds}}}});
      return;
    }
    if (r.unchanged) {
      std::printf("nothing to do: all %llu chunks have %s KV\n", (unsigned long long)r.chunks, a->mode.c_str());
      return;
    }
    std::printf("%s: %llu chunks (%llu tokens) in %.1f s: %.2f chunks/s, %.0f tokens/s; mean context %.0f rows;"
                " %llu shards, %.1f MB, %.0f bytes/token\n",
                a->mode.c_str(), (unsigned long long)r.computed, (unsigned long long)r.tokens, r.seconds,
                r.computed / r.seconds, r.tokens / r.seconds, r.computed ? (double)r.context_rows / r.computed : 0.0,
                (unsigned long long)r.shards_written, r.stored_bytes / 1e6,
                r.tokens ? (double)r.stored_bytes / r.tokens : 0.0);
    std::printf("time: model load %.1f s, requests (neighbour KV reads) %.1f s, forward %.1f s (%.1f ms per chunk), "
                "read back %.1f s, convert and store %.1f s\n",
                r.load_seconds, r.view_seconds, r.forward_seconds,
                r.computed ? 1e3 * r.forward_seconds / r.computed : 0.0, r.readback_seconds, r.store_seconds);
    if (a->anchor_scores)
      std::printf("anchor scores recorded for %llu chunks (chunks of %lld tokens or fewer are scored by compress)\n",
                  (unsigned long long)r.scored, (long long)kMaxUnscoredChunkTokens);
  });
}

}  // namespace kvf::cli
