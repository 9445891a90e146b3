// Where every token of a RAG prompt sits (DESIGN.md §6): [S][C_1 L_1]...[C_k L_k][Q] at consecutive positions,
// S = the system prefix (its KV stored once), C_i = the chunks in retrieval order, L_i = K link tokens after each
// chunk (KVLink §2.3; none by default), Q = the question closed by the assistant header.
#pragma once
#include <cstdint>
#include <vector>

namespace kvf {

struct RagLayout {
  int32_t system_rows = 0;  // S occupies positions [0, system_rows)
  struct Chunk {
    int32_t start = 0;        // prompt position of the chunk's first token
    int32_t tokens = 0;       // its token count: the chunk spans [start, start + tokens)
    int64_t first_index = 0;  // index of its first token in context_tokens
  };
  std::vector<Chunk> chunks;
  std::vector<int32_t> context_tokens, context_positions;  // every chunk token, in prompt order (N of them)
  std::vector<int32_t> link_tokens, link_positions;        // every link token, in prompt order
  std::vector<int32_t> question_tokens, question_positions;
  int32_t end = 0;  // the first position after Q: where generation starts

  int64_t n_context() const { return (int64_t)context_tokens.size(); }
};

// Throws kvf::Error when the prompt does not fit `context_length` or the question is empty.
RagLayout make_rag_layout(int32_t system_rows, const std::vector<std::vector<int32_t>>& chunk_tokens,
                          const std::vector<int32_t>& link_tokens_per_chunk, const std::vector<int32_t>& question,
                          int32_t context_length);

}  // namespace kvf
