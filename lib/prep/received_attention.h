// Anchor scores from a prefill's attention probes: how much attention each token of a chunk received from the
// chunk's own tokens. `kvprep prefill --anchor-scores` records them in its shards and `kvprep compress --anchors`
// (select) chooses each segment's kept tokens by them (compress/anchors.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

// Per token of a chunk computed after a view: the attention its key received from the chunk's query rows (every
// row at or after it, its own included), summed over the probed layers and heads. `colsum` is
// ForwardResult::attn_colsum (one entry per probed layer: the view's rows first, then the computed tokens).
// sum: the total over those rows. mean: divided by their count (n_tokens - t), so that a token is not favoured
// for being early in its chunk (more rows can see it) but for how much each row that sees it attends to it.
enum class AnchorScore { Mean, Sum };
std::vector<double> received_attention(const std::vector<std::vector<float>>& colsum, int64_t view_rows,
                                       int64_t n_tokens, AnchorScore kind);
// A chunk's sum scores turned into `kind` (mean divides as received_attention does, so both give the same bits).
std::vector<double> anchor_scores_as(std::vector<double> sums, AnchorScore kind);
AnchorScore anchor_score_from_name(const std::string& name);  // "mean" | "sum"; throws naming the value

}  // namespace kvf
