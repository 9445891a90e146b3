// An answer as JSON: what `kvrun ask --json` prints, each line of `kvrun batch`, and the kvfuse object of a
// `kvrun serve` completion. One place, so the three name every field alike.
#pragma once
#include <nlohmann/json.hpp>

#include "fusion/query_engine.h"

namespace kvf {

// Decode throughput as every command reports it ("tokens_per_s": {"decode"}): the first token comes with the
// prefill's logits, so `generated` tokens take generated - 1 decode steps in `decode_ms`.
inline double decode_tokens_per_s(size_t generated, double decode_ms) {
  return generated > 1 && decode_ms > 0 ? (double)(generated - 1) / (decode_ms / 1000.0) : 0.0;
}

nlohmann::json answer_json(const QueryAnswer& answer);

}  // namespace kvf
