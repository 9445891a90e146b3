#include "model/generate.h"

#include <algorithm>
#include <chrono>

namespace kvf {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int32_t argmax(const float* logits, int64_t n) {
  return (int32_t)(std::max_element(logits, logits + n) - logits);
}

GreedyResult generate_greedy(const Decoder& decoder, const std::vector<int32_t>& prompt,
                             const GreedyOptions& options) {
  const LlamaConfig& c = decoder.config();
  const int64_t n = (int64_t)prompt.size();
  KVF_CHECK(n > 0, "the prompt is empty");
  KVF_CHECK(n <= c.context_length, "the prompt has ", n, " tokens, more than the model context of ",
            c.context_length);
  const int64_t max_new = std::min<int64_t>(options.max_new_tokens, c.context_length - n);
  GreedyResult result;
  if (max_new <= 0) return result;

  auto t0 = std::chrono::steady_clock::now();
  ForwardRequest req;
  req.tokens = prompt;
  for (int64_t i = 0; i < n; ++i) req.positions.push_back((int32_t)i);
  req.logit_rows = {(int32_t)(n - 1)};
  req.return_kv = true;
  ForwardResult out = decoder.forward(req);
  int32_t next = argmax(out.logits.data(), c.vocab);
  result.prefill_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  KvBuffer cache(decoder.backend(), c.n_layers, c.n_kv_heads, c.head_dim, n + max_new);
  cache.append(out.kv);
  for (int64_t step = 0;; ++step) {
    if (options.is_end_token && options.is_end_token(next)) {
      result.ended = true;
      break;
    }
    result.tokens.push_back(next);
    if (options.should_stop && options.should_stop(result.tokens)) {
      result.ended = true;
      break;
    }
    if (step + 1 >= max_new) break;
    const KvSegment view = cache.view();
    ForwardRequest step_req;
    step_req.tokens = {next};
    step_req.positions = {(int32_t)(n + step)};
    step_req.view = {&view};
    step_req.logit_rows = {0};
    step_req.return_kv = true;
    out = decoder.forward(step_req);
    cache.append(out.kv);
    next = argmax(out.logits.data(), c.vocab);
  }
  result.decode_ms = ms_since(t0);
  return result;
}

}  // namespace kvf
