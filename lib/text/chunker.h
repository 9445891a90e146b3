// Splits documents into chunks of about `chunk_tokens` decoder tokens, never above a hard maximum, cutting at
// paragraph breaks where it can, else at sentence ends, else at whitespace, and only as a last resort inside a
// word (always between whole UTF-8 characters). Deterministic: the same text and tokenizer give the same chunks.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvf {

// The one way a chunk's text is shown to a model, offline (prefill, embedding) and at query time (kvrun prompts):
// "Title: <title>\n<text>\n\n" (no title line when the title is empty). The closing blank line separates chunks
// whose stored tokens are concatenated in a prompt. Stored token ids and KV depend on it, so any change must bump
// kChunkRenderingVersion, which the store manifest records.
std::string render_chunk(std::string_view title, std::string_view text);
inline constexpr int kChunkRenderingVersion = 2;

struct ChunkerOptions {
  size_t chunk_tokens = 256;  // aim; a document's chunks are balanced around it
  size_t max_tokens = 0;      // hard maximum of a rendered chunk; 0: chunk_tokens * 5 / 4
  size_t hard_max() const { return max_tokens ? max_tokens : chunk_tokens * 5 / 4; }
  void check() const;  // throws kvf::Error naming the bad value
};

// Token ids of a text, without special tokens (BpeTokenizer::encode(text, false, false) for the decoder).
using Tokenize = std::function<std::vector<int32_t>(std::string_view)>;

struct TextChunk {
  size_t begin = 0;  // byte range of the chunk in the document text: starts and ends outside whitespace
  size_t end = 0;
  std::vector<int32_t> tokens;  // of render_chunk(title, text.substr(begin, end - begin)), at most hard_max()
};

// The chunks of one document, in text order; none for a blank text. Whitespace between chunks belongs to none.
// Throws kvf::Error when the title alone leaves no room under the maximum.
std::vector<TextChunk> chunk_document(std::string_view title, std::string_view text, const ChunkerOptions& options,
                                      const Tokenize& tokenize);

}  // namespace kvf
