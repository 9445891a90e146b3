// What a POST /v1/chat/completions body asks (OpenAI's chat completion request, greedy decoding only) and the
// kvfuse extension object, checked field by field: anything kvrun serve cannot honour is an ApiError naming the
// field and the value, never silently replaced.
#pragma once
#include <string>
#include <vector>

#include "fusion/query_engine.h"

namespace kvf {

// What a server answers with unless a request says otherwise (kvrun serve's options).
struct ServeDefaults {
  FusionMethod method = FusionMethod::Fusion;
  double recompute = 0.15;
  int top_k = 5;
  int max_tokens = 64;
  int max_tokens_limit = 4096;  // the most a request may ask for
  std::string kv_mode = "independent";
  bool exact_first_chunk = false;  // as kvrun ask's default for the KV mode (AnswerOptions::exact_first_chunk)
  FirstChunkKv first_chunk_kv = FirstChunkKv::Auto;
};

struct ChatRequest {
  Query query;           // the last user message is the question; chunk ids or documents when given
  AnswerOptions options;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
};

// Throws ApiError (400) naming the field: body not a JSON object, messages missing or malformed, no user message,
// a temperature other than 0, n other than 1, a max_tokens out of range, a stop that is not text, an unknown
// kvfuse field, a method or KV mode this server does not run, a ratio outside [0, 1], both chunk_ids and
// documents, a chunk id that is not 16 hex digits.
ChatRequest parse_chat_request(const std::string& body, const ServeDefaults& defaults);

struct RetrieveRequest {
  std::string query;
  int top_k = 5;
};
RetrieveRequest parse_retrieve_request(const std::string& body, const ServeDefaults& defaults);

}  // namespace kvf
