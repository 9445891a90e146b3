// Question files for `kvrun batch` (and eval): JSONL, optionally gzip-compressed, one question per line:
//   {"id": "q1", "question": "...", "answers": ["..."], "chunk_ids": ["3fa2..."], "contexts": [{"title", "text"}]}
// Only "question" is required. "chunk_ids" (16-hex-digit chunk ids) or "contexts" (passages the store was built
// from: the fixed-context setting) give the question's chunks in prompt order; with neither, kvrun retrieves.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/query_engine.h"

namespace kvf {

struct QueryRecord {
  Query query;
  std::vector<std::string> answers;  // gold answers, when the file has them
  std::vector<int32_t> gold_passages;  // "gold_ctx_idx": indices of the supporting passages in "contexts"
  size_t line = 0;                   // 1-based line in the file
};

// Reads every line (blank lines skipped). Every problem is collected first; the kvf::Error lists them as
// "<file>:<line>: ..." (the first 20). A question without "id" gets its line number as id.
std::vector<QueryRecord> read_query_file(const std::string& path);

// Refuses a question with nothing to ask (empty, or only whitespace), naming `where` ("--question").
void require_question_text(const std::string& question, const std::string& where);

}  // namespace kvf
