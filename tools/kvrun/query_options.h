// The options `kvrun ask` and `kvrun batch` share: which store and KV, which method, how to generate; and how
// an answer is printed (one JSON object, or text with a timing line).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/common_options.h"
#include "fusion/query_engine.h"

namespace kvf::cli {

struct QueryCliOptions {
  QueryEngineOptions engine;
  AnswerOptions answer;
  std::string method = "fusion";
  std::string compute = "fast";
  double cache_mb = 1024;
  CommonOptions common;  // --threads, --json, --quiet

  QueryEngineOptions engine_options() const;
  AnswerOptions answer_options() const;  // parses the method; throws kvf::Error naming a bad value
};

// Registers --store, --model, --embedder, --kv, --method, --recompute, --top-k, --link-tokens, --max-tokens,
// --stop, --cache-mb, --backend, --compute, --decode-low-bit-at-load, --exact-first-chunk, --first-chunk-kv,
// --show-recomputed and
// the common options (--threads, --json, --quiet) on `cmd`.
void add_query_options(CLI::App& cmd, QueryCliOptions& o);
// --exact-first-chunk and --no-exact-first-chunk (kvrun ask, batch and eval); after parsing,
// apply_exact_first_chunk_default sets the value neither flag gave: on where every KV mode in `kv_modes` is
// independent or similarity (measured in docs/eval.md, "The first chunk's KV").
// --first-chunk-kv sets where that chunk's rows come from (FirstChunkKv).
void add_exact_first_chunk_option(CLI::App& cmd, bool& exact_first_chunk, FirstChunkKv& first_chunk_kv);
void apply_exact_first_chunk_default(const CLI::App& cmd, const std::vector<std::string>& kv_modes,
                                     bool& exact_first_chunk);

// The answer, then its sources and one line of counts and timings (notes on stderr, so stdout holds only answers;
// --quiet leaves them out).
void print_answer_text(const QueryAnswer& a);

}  // namespace kvf::cli
