// How close a method's model state is to full attention's on the same prompt: the first token's distribution
// (KL divergence), the gold answer under teacher forcing (log-likelihood, top-1 agreement) and the context KV
// itself (FusionRAG eq. 7, per layer).
#pragma once
#include <cstdint>
#include <vector>

#include "store/chunk_kv.h"

namespace kvf {

// KL(P || Q) in nats between the softmax distributions of two logit vectors of equal length.
double kl_divergence(const std::vector<float>& logits_p, const std::vector<float>& logits_q);

// Mean over rows t of KL(P_t || Q_t) in nats, P_t and Q_t the softmax of row t of two [rows, vocab] logit arrays
// (kvrun eval --reference-kv: the reference's and another run's logits, both forced on the reference's answer).
double mean_kl_divergence(const std::vector<float>& logits_p, const std::vector<float>& logits_q, int64_t vocab);

// Mean over t of log softmax(logits[t])[tokens[t]]: logits is [tokens.size(), vocab].
double mean_log_likelihood(const std::vector<float>& logits, const std::vector<int32_t>& tokens, int64_t vocab);

// Share of rows whose argmax agrees between two [rows, vocab] logit arrays (ties to the lowest id).
double top1_agreement(const std::vector<float>& logits_a, const std::vector<float>& logits_b, int64_t vocab);

struct LayerDeviation {
  std::vector<double> k, v;  // per layer: mean over context tokens (those both keep) of sum_j (a - b)^2 (eq. 7)
};
// Rows are matched by position; both must have the same layers and width.
LayerDeviation kv_deviation(const HostKv& reference, const HostKv& other);

}  // namespace kvf
