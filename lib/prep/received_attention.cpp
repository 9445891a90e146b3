#include "prep/received_attention.h"

#include "core/error.h"

namespace kvf {

std::vector<double> received_attention(const std::vector<std::vector<float>>& colsum, int64_t view_rows,
                                       int64_t n_tokens, AnchorScore kind) {
  std::vector<double> scores((size_t)n_tokens, 0.0);
  for (const std::vector<float>& layer : colsum) {
    KVF_CHECK((int64_t)layer.size() == view_rows + n_tokens, "anchor scores: a probe has ", layer.size(),
              " columns, expected ", view_rows, " view rows + ", n_tokens, " tokens");
    for (int64_t t = 0; t < n_tokens; ++t) scores[(size_t)t] += layer[(size_t)(view_rows + t)];
  }
  return anchor_scores_as(std::move(scores), kind);
}

std::vector<double> anchor_scores_as(std::vector<double> scores, AnchorScore kind) {
  const size_t n = scores.size();
  if (kind == AnchorScore::Mean)
    for (size_t t = 0; t < n; ++t) scores[t] /= (double)(n - t);
  return scores;
}

AnchorScore anchor_score_from_name(const std::string& name) {
  KVF_CHECK(name == "mean" || name == "sum", "--anchor-score must be mean or sum, got '", name, "'");
  return name == "mean" ? AnchorScore::Mean : AnchorScore::Sum;
}

}  // namespace kvf
