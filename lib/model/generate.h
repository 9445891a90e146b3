// Greedy decoding with the query's own growing KV buffer, timed by phase.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/decoder.h"

namespace kvf {

struct GreedyOptions {
  int max_new_tokens = 256;
  std::function<bool(int32_t)> is_end_token;                          // e.g. the tokenizer's end-of-generation set
  std::function<bool(const std::vector<int32_t>&)> should_stop;       // e.g. a stop string seen in the text so far
};

struct GreedyResult {
  std::vector<int32_t> tokens;  // generated ids, the end token excluded
  bool ended = false;           // stopped by an end token or should_stop, not by the length limit
  double prefill_ms = 0;        // prompt forward pass up to its last logits (= time to first token)
  double decode_ms = 0;         // every later step
};

// Argmax with ties to the lowest id. Logits that are not all finite (a model whose weights give NaN) are a
// kvf::Error naming the first such value and its token id: no token is chosen from garbage.
int32_t argmax(const float* logits, int64_t n);

// A prompt prefilled at positions 0..n-1, ready to decode: its KV in a buffer with room for `room` more rows, the
// argmax of its last logits, and the prefill's time.
struct PrefilledPrompt {
  std::unique_ptr<KvBuffer> kv;
  int32_t first = 0;
  int32_t next_position = 0;
  double prefill_ms = 0;
};
PrefilledPrompt prefill_prompt(const Decoder& decoder, const std::vector<int32_t>& prompt, int64_t room);

// Prefills `prompt` at positions 0..n-1, then decodes greedily. Throws if the prompt does not fit the context;
// generation stops at the context's end.
GreedyResult generate_greedy(const Decoder& decoder, const std::vector<int32_t>& prompt, const GreedyOptions& options);

// Decodes greedily after a prefill that is already done: `first` is the argmax of its last logits, the next
// token goes to `next_position`. Each step attends to `base_view` and then `own` (the query's buffer, holding the
// prefill's computed rows; generated rows are appended to it). Fills tokens, ended and decode_ms.
void decode_greedy(const Decoder& decoder, const std::vector<const KvSegment*>& base_view, KvBuffer& own,
                   int32_t first, int32_t next_position, const GreedyOptions& options, GreedyResult& result);

// Several independent decodes stepped together: one forward per step over every sequence still running, so the
// weights are read once per step for all of them (eval decodes a question's answers by every method this way).
// Each job's tokens are what decode_greedy would give it (on the CPU bit for bit: a decoding step's rows are
// computed as each would be alone: Batching::Invariant); decode_ms is the whole batch's time.
struct DecodeJob {
  std::vector<const KvSegment*> base_view;
  KvBuffer* own = nullptr;
  int32_t first = 0, next_position = 0;
  GreedyOptions options;
  GreedyResult result;
  // Where the job stands (begin_decode sets it): the token it takes next, steps made, the most it may make.
  int32_t next = 0;
  int64_t step = 0, max_new = 0;
  bool done = false;
};
void decode_greedy_batch(const Decoder& decoder, std::vector<DecodeJob>& jobs);

// decode_greedy_batch a step at a time, for sequences that come and go (kvrun serve): begin_decode readies a job,
// then each decode_step takes every running job's pending token (into result.tokens, or ending the job) and runs
// one forward call for the jobs that go on. Returns false when no job went on (every job is done). A job gives the
// tokens decode_greedy gives it (on the CPU bit for bit) whichever jobs step beside it and whenever it joins;
// decode_ms is left to the caller.
void begin_decode(const Decoder& decoder, DecodeJob& job);
bool decode_step(const Decoder& decoder, const std::vector<DecodeJob*>& jobs);

// Teacher forcing after a prefill that is already done: the logits at each of `tokens` ([tokens.size(), vocab]),
// row 0 being `first_logits` (the prefill's) and row t those after tokens[0..t-1] were fed at `next_position`
// on. Reads `base_view` then `own` without changing them.
std::vector<float> forced_logits(const Decoder& decoder, const std::vector<const KvSegment*>& base_view,
                                 const KvSegment& own, const std::vector<float>& first_logits,
                                 int32_t next_position, const std::vector<int32_t>& tokens);

}  // namespace kvf
