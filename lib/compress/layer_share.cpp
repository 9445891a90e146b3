#include "compress/layer_share.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace kvf {
namespace {

struct Calibration {
  std::vector<ForwardRequest> batch;
  int64_t width = 0;  // floats per sample's hidden output
};

Calibration calibration_batch(const std::vector<std::vector<int32_t>>& passages) {
  Calibration c;
  for (const std::vector<int32_t>& p : passages) {
    ForwardRequest r;
    r.tokens = p;
    for (size_t i = 0; i < p.size(); ++i) r.positions.push_back((int32_t)i);
    r.return_hidden = true;
    c.batch.push_back(std::move(r));
  }
  return c;
}

// The last layer's output averaged over the samples (every position and hidden unit kept).
std::vector<double> mean_hidden(const std::vector<ForwardResult>& out) {
  std::vector<double> mean(out.at(0).hidden.size(), 0.0);
  for (const ForwardResult& r : out) {
    KVF_CHECK(r.hidden.size() == mean.size(), "layer sharing: calibration samples must have equal lengths");
    for (size_t i = 0; i < mean.size(); ++i) mean[i] += r.hidden[i];
  }
  for (double& x : mean) x /= (double)out.size();
  return mean;
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

}  // namespace

std::vector<std::vector<int32_t>> calibration_passages(const ChunkTable& chunks, int samples, int tokens) {
  KVF_CHECK(samples >= 1, "--samples must be at least 1, got ", samples);
  KVF_CHECK(tokens >= 1, "--sample-tokens must be at least 1, got ", tokens);
  std::vector<size_t> long_enough;
  for (size_t i = 0; i < chunks.size(); ++i)
    if ((int)chunks.chunks()[i].tokens.size() >= tokens) long_enough.push_back(i);
  KVF_CHECK(!long_enough.empty(), "layer sharing: no chunk of the store has ", tokens,
            " tokens for calibration; lower --sample-tokens");
  const size_t n = std::min(long_enough.size(), (size_t)samples);
  std::vector<std::vector<int32_t>> out;
  for (size_t s = 0; s < n; ++s) {
    const std::vector<int32_t>& t = chunks.chunks()[long_enough[s * long_enough.size() / n]].tokens;
    out.emplace_back(t.begin(), t.begin() + tokens);
  }
  return out;
}

ShareSearchResult search_layer_sharing(const Decoder& decoder, const std::vector<std::vector<int32_t>>& passages,
                                       const ShareSearchOptions& o) {
  const int L = decoder.config().n_layers;
  KVF_CHECK(o.layers >= 1 && o.layers < L, "--share-layers must be in [1, ", L - 1, "] for this ", L,
            "-layer model, got ", o.layers);
  KVF_CHECK(!passages.empty(), "layer sharing: no calibration passages");
  Calibration cal = calibration_batch(passages);
  for (ForwardRequest& r : cal.batch) r.return_kv = true;
  const std::vector<ForwardResult> plain = decoder.forward(cal.batch);
  for (ForwardRequest& r : cal.batch) r.return_kv = false;
  const std::vector<double> reference = mean_hidden(plain);

  // Each layer's keys and values averaged over the samples: [tokens, kv_heads, head_dim] each.
  Backend& b = decoder.backend();
  const int64_t elems = plain[0].kv.k[0].numel();
  std::vector<std::vector<double>> mean_k(L, std::vector<double>((size_t)elems, 0.0)), mean_v = mean_k;
  std::vector<float> buf((size_t)elems);
  for (const ForwardResult& r : plain)
    for (int l = 0; l < L; ++l) {
      KVF_CHECK(r.kv.k[l].numel() == elems, "layer sharing: calibration samples must have equal lengths");
      b.copy_to_host(r.kv.k[l], buf.data(), buf.size() * sizeof(float));
      for (int64_t i = 0; i < elems; ++i) mean_k[l][i] += buf[i] / (double)plain.size();
      b.copy_to_host(r.kv.v[l], buf.data(), buf.size() * sizeof(float));
      for (int64_t i = 0; i < elems; ++i) mean_v[l][i] += buf[i] / (double)plain.size();
    }

  std::vector<ShareStep> ranking;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j) {
      double d2 = 0;
      for (int64_t e = 0; e < elems; ++e) {
        const double dk = mean_k[i][e] - mean_k[j][e], dv = mean_v[i][e] - mean_v[j][e];
        d2 += dk * dk + dv * dv;
      }
      ranking.push_back({i, j, std::sqrt(d2), std::numeric_limits<double>::quiet_NaN(), ""});
    }
  // Most dissimilar first; equal distances in pair order, so the walk is fully determined.
  std::stable_sort(ranking.begin(), ranking.end(),
                   [](const ShareStep& lhs, const ShareStep& rhs) { return lhs.distance > rhs.distance; });

  ShareSearchResult res;
  res.sources.resize(L);
  for (int l = 0; l < L; ++l) res.sources[l] = l;
  std::vector<bool> is_read(L, false);
  Progress progress("share-search", "pairs", ranking.size(), o.progress);
  for (ShareStep& step : ranking) {
    if (res.shared == o.layers) break;
    progress.advance(1);
    if (res.sources[step.target] != step.target) step.outcome = "target already reads another layer";
    else if (is_read[step.target]) step.outcome = "target is read by another layer";
    else if (res.sources[step.source] != step.source) step.outcome = "source reads another layer";
    if (!step.outcome.empty()) {
      res.steps.push_back(step);
      continue;
    }
    std::vector<int32_t> candidate = res.sources;
    candidate[step.target] = step.source;
    step.similarity = cosine(mean_hidden(decoder.with_kv_sources(candidate)->forward(cal.batch)), reference);
    if (step.similarity > o.threshold) {
      step.outcome = "shared";
      res.sources = candidate;
      is_read[step.source] = true;
      res.similarity = step.similarity;
      ++res.shared;
    } else {
      step.outcome = "below threshold";
    }
    res.steps.push_back(step);
  }
  progress.finish();
  return res;
}

}  // namespace kvf
