// kvprep compress (DESIGN.md §7): a new KV mode made from a stored one by anchor tokens, layer sharing and int8
// quantization, alone or together, and kvprep share-search, the layer-sharing strategy those use. The new mode
// is written like any other (kv/<name>-NNNNN.h5, committed shard by shard, resumable: a rerun computes only the
// chunks it lacks) and its recipe goes to the manifest (settings "compress-<name>"), which kvrun reads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compress/layer_share.h"
#include "core/progress.h"
#include "store/h5_compression.h"

namespace kvf {

struct ShareSearchStageOptions {
  std::string store_dir, model_path;
  ShareSearchOptions search;
  int samples = 30, sample_tokens = 64;  // calibration: passages drawn from the store's chunks
};

// Runs the search and records it in the manifest (settings "layer_sharing"), replacing an earlier one.
ShareSearchResult run_share_search(const ShareSearchStageOptions& options);

struct CompressStageOptions {
  std::string store_dir, model_path;
  std::string from, to;                 // stored KV mode read, new mode written
  double anchors = 0;                   // fraction of each segment kept; 0: no anchors
  std::string anchor_mode = "select";   // select | append
  std::string anchor_score = "sum";     // select: sum | mean of the attention received (anchors.h)
  bool recompute_scores = false;        // select: ignore scores `prefill --anchor-scores` recorded; re-run the view
  int segment = 100;
  int share_layers = 0;                 // layers sharing an earlier layer's KV; 0: none
  double share_threshold = 0.5;
  int share_samples = 30, share_sample_tokens = 64;
  std::string quant;                    // "" (keep the source's type) | "int8" | "int4" | "int3" | "int2"
  int quant_group = 32;                 // int4/int3/int2: rows per K group, values per V group (core/low_bit_kv.h)
  int keep_first = 0;                   // int4/int3/int2: each chunk's first rows kept in f16 (attention sinks)
  bool rotate = false;                  // int4/int3/int2: Hadamard rotation of every head vector (core/low_bit_kv.h)
  std::string v_levels = "uniform";     // int4/int3/int2: V's levels, uniform | nf (normal-quantile, one scale)
  h5::Compression entropy;              // how the new shards keep their bytes (store/h5_compression.h); not a recipe
                                        // setting: shards coded differently hold the same KV
  uint64_t shard_bytes = 256ull << 20;
  int batch_tokens = 1024;              // select: chunks re-run in ragged batches of about this many tokens
  uint64_t neighbor_cache_bytes = 1ull << 30;
  ProgressOptions progress;
};

struct CompressStageResult {
  bool unchanged = false;
  uint64_t chunks = 0;            // with KV in the new mode
  uint64_t computed = 0;          // by this run
  uint64_t tokens = 0;            // chunk tokens of the chunks this run wrote
  uint64_t rows = 0;              // rows it stored for them
  uint64_t stored_bytes = 0, source_bytes = 0;  // KV bytes written, and those of the same chunks in `from`
  uint64_t file_bytes = 0;  // the bytes of the shard files written (on disk: entropy coding and the index included)
  uint64_t shards_written = 0;
  uint64_t recorded_scores = 0;   // select: chunks whose anchors came from scores recorded during prefill
  std::vector<int32_t> sources;   // layer sources of the new mode
  double seconds = 0;
};

// Refuses options the stage would refuse, before anything runs (a pipeline checks every compress entry before
// its first stage): kvf::Error naming the option as kvprep compress spells it and the value; NaN fails every
// range.
void check_compress_options(const CompressStageOptions& options);

CompressStageResult run_compress_stage(const CompressStageOptions& options);  // check_compress_options first

}  // namespace kvf
