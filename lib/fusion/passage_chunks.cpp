#include "fusion/passage_chunks.h"

#include "store/chunk_table.h"
#include "text/chunker.h"

namespace kvf {

PassageChunks chunk_passages(const std::vector<Passage>& passages, const nlohmann::json& chunking,
                             const Tokenizer& tokenizer, uint64_t model_fingerprint) {
  ChunkerOptions chunker;
  chunker.chunk_tokens = chunking.at("chunk_tokens").get<size_t>();
  chunker.max_tokens = chunking.at("max_tokens").get<size_t>();
  const Tokenize tokenize = [&](std::string_view text) { return tokenizer.encode(text, false, false); };
  PassageChunks out;
  for (size_t i = 0; i < passages.size(); ++i)
    for (const TextChunk& piece : chunk_document(passages[i].title, passages[i].text, chunker, tokenize)) {
      out.ids.push_back(chunk_id(piece.tokens, model_fingerprint));
      out.passage.push_back((int32_t)i);
    }
  return out;
}

}  // namespace kvf
