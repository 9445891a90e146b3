// KVSharer's strategy search (kvsharer.txt Algorithm 1, DESIGN.md §7). On a calibration set, each layer's KV is
// averaged over the samples (keys and values apart, every token position and head kept); layer pairs are ranked by
// the Euclidean distance of those averages, most dissimilar first; walking that ranking, a pair (i < j) is shared
// (layer j reads layer i's KV) when the model with every share so far still gives a last-layer output whose
// sample-averaged cosine similarity to the plain model's is above the threshold; the walk stops at `layers` shares.
// A pair is passed over when j already reads another layer, or j is read by another layer, or i reads another
// layer: the map stays one level deep (a shared layer reads a source, a source reads itself).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/progress.h"
#include "model/decoder.h"
#include "store/chunk_table.h"

namespace kvf {

struct ShareSearchOptions {
  int layers = 0;           // C: layers to share (each then reads an earlier layer's KV)
  double threshold = 0.5;   // T: a share is kept while the output similarity stays above it
  ProgressOptions progress;
};

struct ShareStep {
  int source = 0, target = 0;  // layer target would read layer source's KV
  double distance = 0;         // Euclidean distance of their mean KV
  double similarity = 0;       // output cosine similarity with this share added (NaN when passed over)
  std::string outcome;         // "shared", "below threshold", or why it was passed over
};

struct ShareSearchResult {
  std::vector<int32_t> sources;  // per layer: the layer whose KV it reads (itself when not shared)
  int shared = 0;
  double similarity = 1;         // output cosine similarity of the final map
  std::vector<ShareStep> steps;  // the ranking walked, in order
};

// `samples` passages of exactly `tokens` tokens each from the chunk table: the chunks with at least that many
// tokens, evenly spaced over the table's order (deterministic), cut to their first `tokens`. Throws when no
// chunk is long enough.
std::vector<std::vector<int32_t>> calibration_passages(const ChunkTable& chunks, int samples, int tokens);

// Each passage runs alone from position 0 (no system prompt, no view).
ShareSearchResult search_layer_sharing(const Decoder& decoder, const std::vector<std::vector<int32_t>>& passages,
                                       const ShareSearchOptions& options);

}  // namespace kvf
