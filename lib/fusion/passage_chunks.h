// A query's given passages cut into the store's chunks: chunked as the store chunked its corpus (the manifest's
// "chunking" settings) and named by the same content ids, so the fixed-context setting finds each passage's KV.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace kvf {

struct Passage {
  std::string title, text;
};

struct PassageChunks {
  std::vector<uint64_t> ids;      // in passage order; whether the store holds them is the caller's to check
  std::vector<int32_t> passage;   // the index of each chunk's passage
};

PassageChunks chunk_passages(const std::vector<Passage>& passages, const nlohmann::json& chunking,
                             const Tokenizer& tokenizer, uint64_t model_fingerprint);

}  // namespace kvf
