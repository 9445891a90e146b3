// Anchor tokens (KVLink §2.4, DESIGN.md §7): a chunk is cut into segments of `segment` tokens and each keeps
// ceil(fraction * length) rows (a shorter last segment keeps the same fraction).
//   select (training-free): the segment's tokens that the chunk's tokens gave the most attention during
//     precompute (prep/received_attention.h), always with the chunk's first token; rows keep their in-chunk positions.
//   append: that many anchor tokens computed after each segment, attending to S, their own segment's rows and
//     the earlier segments' anchors; only the anchors are stored, at the last positions of their segment, so a
//     compressed chunk still spans its own positions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "prep/received_attention.h"

namespace kvf {

struct AnchorSegment {
  int32_t begin = 0, end = 0;  // in-chunk positions [begin, end)
  int32_t keep = 0;            // rows kept (select) or anchors appended (append)
};

// The segments of an n-token chunk. Throws kvf::Error for a fraction outside (0, 1] or segment < 1.
std::vector<AnchorSegment> anchor_segments(int32_t n_tokens, int32_t segment, double fraction);

// select: the in-chunk positions kept, ascending. scores[t] = attention token t received (one per token).
// Within a segment the highest scores win, ties to the earlier position; position 0 is always kept and takes
// one of its segment's places.
std::vector<int32_t> select_anchor_positions(const std::vector<double>& scores, int32_t segment, double fraction);

// append: where a segment's anchors are stored (its last `keep` positions), in order.
std::vector<int32_t> appended_anchor_positions(const AnchorSegment& segment);

}  // namespace kvf
