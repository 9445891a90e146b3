// Choosing the context tokens a sparse prefill recomputes: how many, and the top scores of a scoring rule.
#pragma once
#include <cstdint>
#include <vector>

namespace kvf {

// How many of n context tokens the ratio r in [0, 1] recomputes: round(r * n), halves up.
int64_t recompute_count(double ratio, int64_t n);

// Indices of the `count` highest scores, ascending; among equal scores the lower index wins.
std::vector<int64_t> top_scored(const std::vector<float>& scores, int64_t count);

// CacheBlend's score (FusionRAG eq. 8) for rows of width `width` (kv_heads * head_dim): the L2 norm of
// fresh - stored, per row.
std::vector<float> l2_deviation(const float* fresh, const float* stored, int64_t rows, int64_t width);

}  // namespace kvf
