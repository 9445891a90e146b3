#include "compress_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "store_lock_option.h"
#include "compress/compress_recipes.h"
#include "compress/compress_stage.h"
#include "io/model_paths.h"
#include "prep/store_model.h"
#include "prep/received_attention.h"

namespace kvf::cli {
namespace {

std::string sources_text(const std::vector<int32_t>& sources) {
  std::string out;
  for (size_t l = 0; l < sources.size(); ++l)
    if (sources[l] != (int32_t)l) out += (out.empty() ? "" : ", ") + std::to_string(l) + "<-" + std::to_string(sources[l]);
  return out.empty() ? "none" : out;
}

}  // namespace

void add_compress_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    CompressStageOptions o;  // the options bind to it: its defaults (and so --help's) are the library's
    std::string model;
    double shard_mb = (double)o.shard_bytes / (1 << 20);
    std::string entropy = h5::compression_name(o.entropy);
    std::string recipe;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("compress", "Make a smaller KV mode from a stored one (anchors, layer sharing, int8 to int2, zstd, recipes)");
  cmd->footer(
      "Examples:\n"
      "  kvprep compress --store stores/demo --from similarity --to sim-a25 --anchors 0.25\n"
      "  kvprep compress --store stores/demo --from similarity --to sim-int8 --quant int8\n"
      "  kvprep compress --store stores/demo --from similarity --to sim-int4 --quant int4 --quant-group 32\n"
      "  kvprep compress --store stores/demo --from similarity --to sim-int3 --quant int3 --quant-group 64\n"
      "  kvprep compress --store stores/demo --from similarity --to sim-r4z --quant int4 --quant-group 64 --rotate \\\n"
      "      --v-levels nf --entropy zstd:19                                   # 3.75x on disk, answers barely move\n"
      "  kvprep compress --store stores/demo --from sim-a25 --to sim-a25-s8-int8 --share-layers 8 --quant int8\n"
      "  kvprep compress --store stores/demo --from similarity --to sim-8x --recipe 8x       # 8x smaller on disk\n"
      "  kvrun ask --store stores/demo --kv sim-a25 --method fusion --question \"...\"\n"
      "--anchors A keeps ceil(A*S) rows of every S-token segment. select (training-free): the tokens the chunk's own\n"
      "tokens attended to most when its KV was computed (the chunk's first token always), at their positions.\n"
      "append: ceil(A*S) anchor tokens computed after each segment over it and the earlier anchors, stored at the\n"
      "segment's last positions (meant for models trained for them). --share-layers C: C layers read an earlier\n"
      "layer's KV (the store's `kvprep share-search` result for these settings, searched now if there is none); only\n"
      "source layers are stored. --quant int8: int8 with one f16 scale per row and head; int4, int3 and int2: K per\n"
      "channel over groups of --quant-group rows, V per row over groups of as many values (KIVI's grouping), optionally\n"
      "with each chunk's first --keep-first rows in f16. --rotate multiplies each head's K and V vectors by the\n"
      "normalized Walsh-Hadamard matrix before quantizing (and back when read): no bits more, smaller group ranges;\n"
      "--v-levels nf gives V normal-quantile levels with one f16 scale per group (no minimum: 2 bytes less per\n"
      "group). Over 200 questions on Qwen 1.5B, fusion's answers against the uncompressed KV's (docs/compress.md,\n"
      "\"Fidelity\"): rotated int4 g64 with nf V and zstd (3.75x on disk) keeps 93-93.5% of them unchanged, F1 level;\n"
      "--recipe 8x keeps 60-78.5%, F1 -0.04 to -0.08.\n"
      "Reading does one inverse transform per head and row (decoding alone: 2.6-3.4x the unrotated codec's time).\n"
      "Compressions combine; a rerun computes only chunks the\n"
      "new mode lacks. Bytes per token: `kvprep inspect`.\n"
      "Measured (SmolLM2-135M, HotpotQA, fusion at 15%; docs/results/compress-hotpotqa*): int8 keeps the quality\n"
      "(1.94x smaller); training-free anchors and layer sharing cost far more than they save on this model.");
  a->add_store_option(cmd, "store directory");
  cmd->add_option("--from", a->o.from, "stored KV mode to compress (e.g. similarity)")->required();
  cmd->add_option("--to", a->o.to, "name of the new KV mode (letters, digits, '_', '-')")->required();
  cmd->add_option("--model", a->model, kStoreModelHelp);
  cmd->add_option("--anchors", a->o.anchors, "fraction of each segment kept, in (0, 1]; 0: no anchors")
      ->capture_default_str()
      ->check(finite_in(0.0, 1.0));
  cmd->add_option("--anchor-mode", a->o.anchor_mode, "select | append")
      ->capture_default_str()
      ->check(CLI::IsMember({"select", "append"}));
  cmd->add_option("--anchor-score", a->o.anchor_score,
                  "select: rank by the attention a token received: sum (over the rows after it) | mean (per such row)")
      ->capture_default_str()
      ->check(accepted_by(anchor_score_from_name));
  cmd->add_flag("--recompute-scores", a->o.recompute_scores,
                "select: re-run the view for the scores even where `prefill --anchor-scores` recorded them");
  cmd->add_option("--segment", a->o.segment, "anchor segment length, tokens")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--share-layers", a->o.share_layers, "layers that read an earlier layer's KV; 0: none")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  cmd->add_option("--share-threshold", a->o.share_threshold, "keep a share while output cosine similarity > T")
      ->capture_default_str()
      ->check(finite_in(-1.0, 1.0));
  cmd->add_option("--share-samples", a->o.share_samples, "layer sharing: calibration passages")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--share-sample-tokens", a->o.share_sample_tokens, "layer sharing: tokens per calibration passage")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--quant", a->o.quant,
                  "int8: K and V, one f16 scale per row and head | int4, int3, int2: K per channel over groups of rows, V "
                  "per row over groups of values, f16 scale and minimum per group")
      ->check(CLI::IsMember({"int8", "int4", "int3", "int2"}));
  cmd->add_option("--quant-group", a->o.quant_group, "int4/int3/int2: rows per K group and values per V group (int3: a multiple of 8)")
      ->capture_default_str()
      ->check(CLI::Range(4, 4096));
  cmd->add_option("--keep-first", a->o.keep_first, "int4/int3/int2: each chunk's first rows kept in f16 (attention sinks)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--rotate", a->o.rotate,
                "int4/int3/int2: Hadamard-rotate each head's K and V vectors before quantizing (head dim a power of 2)");
  cmd->add_option("--v-levels", a->o.v_levels,
                  "int4/int3/int2: V's levels: uniform (f16 scale and minimum per group) | nf (normal-quantile levels, "
                  "one f16 scale per group; best with --rotate)")
      ->capture_default_str()
      ->check(CLI::IsMember({"uniform", "nf"}));
  cmd->add_option("--entropy", a->entropy,
                  "how the new shards keep their bytes on disk: none (fastest reads) | zstd:1..22 | deflate:1..9 "
                  "(lossless; readers decode it when they load a chunk; `kvprep inspect` shows bytes on disk and in memory)")
      ->capture_default_str()
      ->check(accepted_by([](const std::string& text) { return h5::parse_compression(text, "--entropy"); }));
  std::string recipes;
  for (const std::string& name : compress_recipe_names())
    recipes += "; " + name + ": " + compress_recipe_summary(name);
  cmd->add_option("--recipe", a->recipe,
                  "a named setting instead of the options it sets" + recipes +
                      ". What each costs in answers: docs/compress.md, \"Fidelity\"")
      ->check(CLI::IsMember(compress_recipe_names()));
  cmd->add_option("--batch-tokens", a->o.batch_tokens, "select: chunk tokens per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--shard-mb", a->shard_mb, "KV per shard file, MB")
      ->capture_default_str()
      ->check(finite_in(1e-3, 1 << 20));
  a->add_lock_and_common_options(cmd,
                                 "one JSON object: mode, from, unchanged, chunks, computed, tokens, rows, "
                                 "stored_bytes, source_bytes, shared_layers, seconds, ...");
  cmd->callback([a, cmd] {
    const StoreCommandScope scope(*a);
    CompressStageOptions o = a->o;
    o.store_dir = a->store;
    o.model_path = resolve_model(model_for_store(a->model, a->store));
    o.shard_bytes = (uint64_t)(a->shard_mb * (1 << 20));
    o.entropy = h5::parse_compression(a->entropy, "--entropy");
    if (!a->recipe.empty()) {
      for (std::string option : compress_recipe_keys()) {
        std::replace(option.begin(), option.end(), '_', '-');
        option = "--" + option;
        KVF_CHECK(cmd->count(option) == 0, "--recipe ", a->recipe, " sets ", option,
                  "; give the recipe or the options, not both");
      }
      apply_compress_recipe(a->recipe, o, "--recipe");
    }
    const CompressStageResult r = run_compress_stage(o);
    if (a->common.json) {
      print_json({{"store", o.store_dir},
                  {"mode", o.to},
                  {"from", o.from},
                  {"unchanged", r.unchanged},
                  {"chunks", r.chunks},
                  {"computed", r.computed},
                  {"tokens", r.tokens},
                  {"rows", r.rows},
                  {"stored_bytes", r.stored_bytes},
                  {"source_bytes", r.source_bytes},
                  {"file_bytes", r.file_bytes},
                  {"shards_written", r.shards_written},
                  {"recorded_scores", r.recorded_scores},
                  {"layer_sources", r.sources},
                  {"seconds", r.seconds}});
      return;
    }
    if (r.unchanged) {
      std::printf("nothing to do: all %llu chunks have %s KV\n", (unsigned long long)r.chunks, o.to.c_str());
      return;
    }
    std::printf("%s: %llu chunks (%llu tokens, %llu rows kept) in %.1f s; %.1f MB in memory (%.1f MB of files on "
                "disk), %.0f bytes/token (%s: %.0f, %.2fx smaller); shared layers: %s\n",
                o.to.c_str(), (unsigned long long)r.computed, (unsigned long long)r.tokens,
                (unsigned long long)r.rows, r.seconds, r.stored_bytes / 1e6, r.file_bytes / 1e6,
                r.tokens ? (double)r.stored_bytes / r.tokens : 0.0, o.from.c_str(),
                r.tokens ? (double)r.source_bytes / r.tokens : 0.0,
                r.stored_bytes ? (double)r.source_bytes / r.stored_bytes : 0.0, sources_text(r.sources).c_str());
    if (a->o.anchors > 0 && a->o.anchor_mode == "select")
      std::printf("anchor scores: %llu chunks read as prefill recorded them, %llu computed again\n",
                  (unsigned long long)r.recorded_scores, (unsigned long long)(r.computed - r.recorded_scores));
  });
}

void add_share_search_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    ShareSearchStageOptions o;
    std::string model;
    bool steps = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("share-search", "Find which layers can share an earlier layer's KV (KVSharer)");
  cmd->footer(
      "Example:\n"
      "  kvprep share-search --store stores/demo --layers 8 --steps\n"
      "Runs calibration passages from the store's chunks through the model, ranks layer pairs by the Euclidean\n"
      "distance of their mean KV (most dissimilar first) and shares them in that order while the last layer's\n"
      "output keeps a cosine similarity above --threshold with the plain model's, until --layers are shared. The\n"
      "result is recorded in the store; `kvprep compress --share-layers C` uses it.");
  a->add_store_option(cmd, "store directory");
  cmd->add_option("--model", a->model, kStoreModelHelp);
  cmd->add_option("--layers", a->o.search.layers, "C: layers to share")->required()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--threshold", a->o.search.threshold, "T: output cosine similarity to stay above")
      ->capture_default_str()
      ->check(finite_in(-1.0, 1.0));
  cmd->add_option("--samples", a->o.samples, "calibration passages")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--sample-tokens", a->o.sample_tokens, "tokens per calibration passage")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--steps", a->steps, "print every pair the search looked at");
  a->add_lock_and_common_options(cmd,
                                 "one JSON object: shared, layers_asked, similarity, sources and (--steps) steps");
  cmd->callback([a] {
    const StoreCommandScope scope(*a);
    ShareSearchStageOptions o = a->o;
    o.store_dir = a->store;
    o.model_path = resolve_model(model_for_store(a->model, a->store));
    const ShareSearchResult r = run_share_search(o);
    if (a->common.json) {
      nlohmann::json out = {{"store", o.store_dir},
                            {"shared", r.shared},
                            {"layers_asked", o.search.layers},
                            {"similarity", r.similarity},
                            {"layer_sources", r.sources}};
      if (a->steps) {
        out["steps"] = nlohmann::json::array();
        for (const ShareStep& s : r.steps)
          out["steps"].push_back({{"target", s.target},
                                  {"source", s.source},
                                  {"distance", s.distance},
                                  {"similarity", std::isnan(s.similarity) ? nlohmann::json()  // passed over
                                                                          : nlohmann::json(s.similarity)},
                                  {"outcome", s.outcome}});
      }
      print_json(out);
      return;
    }
    if (a->steps)
      for (const ShareStep& s : r.steps)
        std::printf("pair %2d <- %2d  distance %10.4f  similarity %s  %s\n", s.target, s.source, s.distance,
                    std::isnan(s.similarity) ? "     -" : std::to_string(s.similarity).substr(0, 6).c_str(),
                    s.outcome.c_str());
    std::printf("shared %d of %d layers asked (output similarity %.4f): %s\n", r.shared, o.search.layers,
                r.similarity, sources_text(r.sources).c_str());
  });
}

}  // namespace kvf::cli
