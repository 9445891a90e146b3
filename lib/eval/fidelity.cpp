#include "eval/fidelity.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "model/generate.h"

namespace kvf {
namespace {

// log softmax, accumulated in double so that tiny probability differences survive.
std::vector<double> log_softmax(const float* x, int64_t n) {
  const double m = *std::max_element(x, x + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp((double)x[i] - m);
  const double log_z = m + std::log(sum);
  std::vector<double> out((size_t)n);
  for (int64_t i = 0; i < n; ++i) out[(size_t)i] = (double)x[i] - log_z;
  return out;
}

}  // namespace

double kl_divergence(const std::vector<float>& logits_p, const std::vector<float>& logits_q) {
  KVF_CHECK(logits_p.size() == logits_q.size() && !logits_p.empty(), "kl_divergence: logits of ",
            logits_p.size(), " and ", logits_q.size(), " entries");
  const std::vector<double> lp = log_softmax(logits_p.data(), (int64_t)logits_p.size());
  const std::vector<double> lq = log_softmax(logits_q.data(), (int64_t)logits_q.size());
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);  // rounding can leave -1e-17 for equal inputs
}

double mean_kl_divergence(const std::vector<float>& logits_p, const std::vector<float>& logits_q, int64_t vocab) {
  KVF_CHECK(vocab > 0 && logits_p.size() == logits_q.size() && !logits_p.empty() &&
                logits_p.size() % (size_t)vocab == 0,
            "mean_kl_divergence: logits of ", logits_p.size(), " and ", logits_q.size(), " entries, vocabulary ", vocab);
  const size_t rows = logits_p.size() / (size_t)vocab;
  double sum = 0;
  for (size_t r = 0; r < rows; ++r) {
    const auto row = [&](const std::vector<float>& x) {
      return std::vector<float>(x.begin() + (long)(r * (size_t)vocab), x.begin() + (long)((r + 1) * (size_t)vocab));
    };
    sum += kl_divergence(row(logits_p), row(logits_q));
  }
  return sum / (double)rows;
}

double mean_log_likelihood(const std::vector<float>& logits, const std::vector<int32_t>& tokens, int64_t vocab) {
  KVF_CHECK(!tokens.empty() && (int64_t)logits.size() == (int64_t)tokens.size() * vocab,
            "mean_log_likelihood: ", logits.size(), " logits for ", tokens.size(), " tokens of vocabulary ", vocab);
  double sum = 0;
  for (size_t t = 0; t < tokens.size(); ++t)
    sum += log_softmax(&logits[t * (size_t)vocab], vocab)[(size_t)tokens[t]];
  return sum / (double)tokens.size();
}

double top1_agreement(const std::vector<float>& logits_a, const std::vector<float>& logits_b, int64_t vocab) {
  KVF_CHECK(logits_a.size() == logits_b.size() && !logits_a.empty() && logits_a.size() % (size_t)vocab == 0,
            "top1_agreement: logits of ", logits_a.size(), " and ", logits_b.size(), " entries");
  const size_t rows = logits_a.size() / (size_t)vocab;
  size_t same = 0;
  for (size_t r = 0; r < rows; ++r)
    same += argmax(&logits_a[r * (size_t)vocab], vocab) == argmax(&logits_b[r * (size_t)vocab], vocab);
  return (double)same / (double)rows;
}

LayerDeviation kv_deviation(const HostKv& a, const HostKv& b) {
  KVF_CHECK(a.layers == b.layers && a.width == b.width, "kv_deviation: rows of ", a.layers, " layers x ", a.width,
            " against ", b.layers, " x ", b.width);
  // Over the positions both have a row for (anchor compression drops some rows).
  std::unordered_map<int32_t, int64_t> b_row;
  for (int64_t r = 0; r < b.rows; ++r) b_row[b.positions[(size_t)r]] = r;
  std::vector<std::pair<int64_t, int64_t>> both;
  for (int64_t r = 0; r < a.rows; ++r) {
    const auto it = b_row.find(a.positions[(size_t)r]);
    if (it != b_row.end()) both.push_back({r, it->second});
  }
  const int64_t w = a.width;
  const auto mean_sq = [&](const std::vector<float>& x, const std::vector<float>& y, int64_t layer) {
    double sum = 0;
    for (const auto& [ra, rb] : both) {
      const float* xa = x.data() + (ra * a.layers + layer) * w;
      const float* yb = y.data() + (rb * b.layers + layer) * w;
      for (int64_t i = 0; i < w; ++i) sum += ((double)xa[i] - yb[i]) * ((double)xa[i] - yb[i]);
    }
    return both.empty() ? 0.0 : sum / (double)both.size();
  };
  LayerDeviation d;
  for (int64_t l = 0; l < a.layers; ++l) {
    d.k.push_back(mean_sq(a.k, b.k, l));
    d.v.push_back(mean_sq(a.v, b.v, l));
  }
  return d;
}

}  // namespace kvf
