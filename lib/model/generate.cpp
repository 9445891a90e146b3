#include "model/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/half_arrays.h"
#include "core/stopwatch.h"

namespace kvf {

int32_t argmax(const float* logits, int64_t n) {
  // One branch-free pass: microseconds against a decoding step's milliseconds (non_finite_model_test.cpp).
  if (!all_finite(logits, (size_t)n)) {
    const int64_t i = std::find_if(logits, logits + n, [](float x) { return !std::isfinite(x); }) - logits;
    fail("the model's logits are not finite (", logits[i], " for token id ", i, " of ", n,
         "): its weights or its computation give NaN or infinity, so there is no next token to choose");
  }
  return (int32_t)(std::max_element(logits, logits + n) - logits);
}

PrefilledPrompt prefill_prompt(const Decoder& decoder, const std::vector<int32_t>& prompt, int64_t room) {
  const LlamaConfig& c = decoder.config();
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t n = (int32_t)prompt.size();
  ForwardRequest req;
  req.tokens = prompt;
  for (int32_t i = 0; i < n; ++i) req.positions.push_back(i);
  req.logit_rows = {n - 1};
  req.return_kv = true;
  const ForwardResult out = decoder.forward(req);
  PrefilledPrompt p;
  p.first = argmax(out.logits.data(), c.vocab);
  p.next_position = n;
  p.prefill_ms = ms_since(t0);
  p.kv = std::make_unique<KvBuffer>(decoder.backend(), c.n_layers, c.n_kv_heads, c.head_dim, n + room,
                                    &decoder.rope());
  p.kv->append(out.kv);
  return p;
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

  PrefilledPrompt prefilled = prefill_prompt(decoder, prompt, max_new);
  result.prefill_ms = prefilled.prefill_ms;
  GreedyOptions limited = options;
  limited.max_new_tokens = (int)max_new;
  decode_greedy(decoder, {}, *prefilled.kv, prefilled.first, prefilled.next_position, limited, result);
  return result;
}

void decode_greedy(const Decoder& decoder, const std::vector<const KvSegment*>& base_view, KvBuffer& own,
                   int32_t first, int32_t next_position, const GreedyOptions& options, GreedyResult& result) {
  std::vector<DecodeJob> jobs(1);
  jobs[0] = {base_view, &own, first, next_position, options, std::move(result)};
  decode_greedy_batch(decoder, jobs);
  result = std::move(jobs[0].result);
}

void begin_decode(const Decoder& decoder, DecodeJob& job) {
  const LlamaConfig& c = decoder.config();
  job.max_new = std::min<int64_t>({job.options.max_new_tokens, c.context_length - job.next_position + 1,
                                   job.own->capacity() - job.own->rows() + 1});
  job.step = 0;
  job.next = job.first;
  job.done = false;
}

bool decode_step(const Decoder& decoder, const std::vector<DecodeJob*>& jobs) {
  const LlamaConfig& c = decoder.config();
  // Take each running sequence's pending token; those that go on need one more step.
  std::vector<DecodeJob*> stepping;
  for (DecodeJob* j : jobs) {
    if (j->done) continue;
    if (j->max_new <= 0) {
      j->done = true;
      continue;
    }
    if (j->options.is_end_token && j->options.is_end_token(j->next)) {
      j->result.ended = j->done = true;
      continue;
    }
    j->result.tokens.push_back(j->next);
    if (j->options.should_stop && j->options.should_stop(j->result.tokens)) {
      j->result.ended = j->done = true;
      continue;
    }
    if (j->step + 1 >= j->max_new) {
      j->done = true;
      continue;
    }
    stepping.push_back(j);
  }
  if (stepping.empty()) return false;
  std::vector<KvSegment> mine;
  mine.reserve(stepping.size());
  std::vector<ForwardRequest> batch;
  for (DecodeJob* j : stepping) {
    mine.push_back(j->own->view());
    ForwardRequest req;
    req.tokens = {j->next};
    req.positions = {j->next_position + (int32_t)j->step};
    req.view = j->base_view;
    req.view.push_back(&mine.back());
    req.logit_rows = {0};
    req.return_kv = true;
    batch.push_back(std::move(req));
  }
  const std::vector<ForwardResult> out = decoder.forward(batch);
  for (size_t b = 0; b < stepping.size(); ++b) {
    DecodeJob& j = *stepping[b];
    j.own->append(out[b].kv);
    j.next = argmax(out[b].logits.data(), c.vocab);
    ++j.step;
  }
  return true;
}

void decode_greedy_batch(const Decoder& decoder, std::vector<DecodeJob>& jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<DecodeJob*> all;
  for (DecodeJob& j : jobs) {
    begin_decode(decoder, j);
    all.push_back(&j);
  }
  while (decode_step(decoder, all)) {
  }
  const double ms = ms_since(t0);
  for (DecodeJob& j : jobs) j.result.decode_ms = ms;
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
