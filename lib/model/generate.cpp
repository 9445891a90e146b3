#include "model/generate.h"
#include "core/stopwatch.h"

#include <algorithm>
#include <chrono>

namespace kvf {
namespace {


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

  KvBuffer own(decoder.backend(), c.n_layers, c.n_kv_heads, c.head_dim, n + max_new);
  own.append(out.kv);
  GreedyOptions limited = options;
  limited.max_new_tokens = (int)max_new;
  decode_greedy(decoder, {}, own, next, (int32_t)n, limited, result);
  return result;
}

void decode_greedy(const Decoder& decoder, const std::vector<const KvSegment*>& base_view, KvBuffer& own,
                   int32_t first, int32_t next_position, const GreedyOptions& options, GreedyResult& result) {
  const LlamaConfig& c = decoder.config();
  const int64_t max_new =
      std::min<int64_t>({options.max_new_tokens, c.context_length - next_position + 1,
                         own.capacity() - own.rows() + 1});
  const auto t0 = std::chrono::steady_clock::now();
  int32_t next = first;
  for (int64_t step = 0; max_new > 0; ++step) {
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
    const KvSegment mine = own.view();
    ForwardRequest step_req;
    step_req.tokens = {next};
    step_req.positions = {next_position + (int32_t)step};
    step_req.view = base_view;
    step_req.view.push_back(&mine);
    step_req.logit_rows = {0};
    step_req.return_kv = true;
    const ForwardResult out = decoder.forward(step_req);
    own.append(out.kv);
    next = argmax(out.logits.data(), c.vocab);
  }
  result.decode_ms = ms_since(t0);
}

std::vector<float> forced_logits(const Decoder& decoder, const std::vector<const KvSegment*>& base_view,
                                 const KvSegment& own, const std::vector<float>& first_logits,
                                 int32_t next_position, const std::vector<int32_t>& tokens) {
  const int64_t vocab = decoder.config().vocab;
  KVF_CHECK((int64_t)first_logits.size() == vocab, "forced_logits: first logits have ", first_logits.size(),
            " entries, the vocabulary ", vocab);
  std::vector<float> logits;
  if (tokens.empty()) return logits;
  logits = first_logits;
  if (tokens.size() == 1) return logits;
  // One pass over all but the last token gives the logits for every later one.
  ForwardRequest req;
  req.tokens.assign(tokens.begin(), tokens.end() - 1);
  for (size_t i = 0; i < req.tokens.size(); ++i) {
    req.positions.push_back(next_position + (int32_t)i);
    req.logit_rows.push_back((int32_t)i);
  }
  req.view = base_view;
  req.view.push_back(&own);
  const ForwardResult out = decoder.forward(req);
  logits.insert(logits.end(), out.logits.begin(), out.logits.end());
  return logits;
}

}  // namespace kvf
