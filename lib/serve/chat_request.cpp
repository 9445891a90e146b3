#include "serve/chat_request.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/hex.h"
#include "serve/api_error.h"

namespace kvf {
namespace {

using nlohmann::json;

std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

[[noreturn]] void bad(const std::string& param, const std::string& why) { throw ApiError(400, param + ": " + why, param); }

json parse_object(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, "the request body is not JSON (byte " + std::to_string(e.byte) + ")", "", "invalid_json");
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object, got " + shown(j), "");
  return j;
}

int int_field(const json& j, const std::string& param, int low, int high) {
  if (!j.is_number_integer() && !j.is_number_unsigned()) bad(param, shown(j) + " is not an integer");
  const int64_t v = j.get<int64_t>();
  if (v < low || v > high)
    bad(param, std::to_string(v) + " is outside [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  return (int)v;
}

std::string text_field(const json& j, const std::string& param) {
  if (!j.is_string()) bad(param, shown(j) + " is not a string");
  return j.get<std::string>();
}

// A message's content: a string, or OpenAI's list of parts of which only text parts are taken.
std::string message_text(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(param, shown(content) + " is neither a string nor a list of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string where = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text"))
      bad(where, shown(part) + " is not a text part {\"type\": \"text\", \"text\": ...}");
    text += text_field(part["text"], where + ".text");
  }
  return text;
}

std::string question_of(const json& messages) {
  if (!messages.is_array() || messages.empty()) bad("messages", "expected a non-empty list of messages, got " + shown(messages));
  std::string question;
  bool found = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m.contains("content"))
      bad(where, shown(m) + " is not a message {\"role\", \"content\"}");
    const std::string role = text_field(m["role"], where + ".role");
    static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
    if (!roles.count(role)) bad(where + ".role", "'" + role + "' is not a role (system, developer, user, assistant, tool)");
    if (role == "user") {
      question = message_text(m["content"], where + ".content");
      found = true;
    }
  }
  if (!found) bad("messages", "no message has the role 'user': the last user message is the question");
  if (question.find_first_not_of(" \t\r\n") == std::string::npos) bad("messages", "the last user message is empty");
  return question;
}

void read_kvfuse(const json& ext, const ServeDefaults& d, ChatRequest& r) {
  if (!ext.is_object()) bad("kvfuse", shown(ext) + " is not an object");
  static const std::set<std::string> known = {"method", "recompute", "kv", "top_k", "chunk_ids", "documents"};
  for (const auto& [key, value] : ext.items())
    if (!known.count(key))
      bad("kvfuse." + key, "unknown field (kvfuse takes method, recompute, kv, top_k, chunk_ids, documents)");
  if (ext.contains("method")) {
    const std::string name = text_field(ext["method"], "kvfuse.method");
    try {
      r.options.method = parse_method(name);
    } catch (const std::exception& e) {
      bad("kvfuse.method", e.what());
    }
  }
  if (ext.contains("recompute")) {
    const json& v = ext["recompute"];
    if (!v.is_number()) bad("kvfuse.recompute", shown(v) + " is not a number");
    const double ratio = v.get<double>();
    if (!std::isfinite(ratio) || ratio < 0 || ratio > 1) bad("kvfuse.recompute", shown(v) + " is outside [0, 1]");
    r.options.recompute = ratio;
  }
  if (ext.contains("kv")) {
    const std::string kv = text_field(ext["kv"], "kvfuse.kv");
    if (kv != d.kv_mode)
      bad("kvfuse.kv", "'" + kv + "': this server answers from the store's '" + d.kv_mode + "' KV (kvrun serve --kv)");
  }
  if (ext.contains("top_k")) r.options.top_k = int_field(ext["top_k"], "kvfuse.top_k", 1, 100);
  if (ext.contains("chunk_ids") && ext.contains("documents"))
    bad("kvfuse", "give chunk_ids or documents, not both");
  if (ext.contains("chunk_ids")) {
    const json& ids = ext["chunk_ids"];
    if (!ids.is_array() || ids.empty()) bad("kvfuse.chunk_ids", shown(ids) + " is not a non-empty list of chunk ids");
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string where = "kvfuse.chunk_ids[" + std::to_string(i) + "]";
      const std::string text = text_field(ids[i], where);
      try {
        r.query.chunk_ids.push_back(parse_hex64(text, where));
      } catch (const std::exception&) {
        bad(where, "'" + text.substr(0, 40) + "' is not a chunk id (16 lower-case hex digits)");
      }
    }
  }
  if (ext.contains("documents")) {
    const json& docs = ext["documents"];
    if (!docs.is_array() || docs.empty()) bad("kvfuse.documents", shown(docs) + " is not a non-empty list of passages");
    for (size_t i = 0; i < docs.size(); ++i) {
      const std::string where = "kvfuse.documents[" + std::to_string(i) + "]";
      const json& doc = docs[i];
      if (!doc.is_object() || !doc.contains("text")) bad(where, shown(doc) + " is not a passage {\"title\", \"text\"}");
      Passage p;
      p.text = text_field(doc["text"], where + ".text");
      if (doc.contains("title")) p.title = text_field(doc["title"], where + ".title");
      if (p.text.find_first_not_of(" \t\r\n") == std::string::npos) bad(where + ".text", "the passage is empty");
      r.query.contexts.push_back(std::move(p));
    }
  }
}

}  // namespace

nlohmann::json api_error_json(int status, const std::string& message, const std::string& param,
                              const std::string& code) {
  const char* type = status == 401 ? "authentication_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json() : json(param)},
            {"code", code.empty() ? json() : json(code)}}}};
}

ChatRequest parse_chat_request(const std::string& body, const ServeDefaults& d) {
  const json j = parse_object(body);
  ChatRequest r;
  r.options.method = d.method;
  r.options.recompute = d.recompute;
  r.options.top_k = d.top_k;
  r.options.max_tokens = d.max_tokens;
  r.options.exact_first_chunk = d.exact_first_chunk;
  r.options.first_chunk_kv = d.first_chunk_kv;
  if (!j.contains("messages")) bad("messages", "missing: give the conversation, the last user message being the question");
  r.query.question = question_of(j["messages"]);
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (j.contains(key) && !j[key].is_null()) r.options.max_tokens = int_field(j[key], key, 1, d.max_tokens_limit);
  if (j.contains("temperature") && !j["temperature"].is_null()) {
    const json& t = j["temperature"];
    if (!t.is_number() || t.get<double>() != 0)
      bad("temperature", shown(t) + ": kvfuse decodes greedily; send 0 or leave it out");
  }
  if (j.contains("top_p") && !j["top_p"].is_null() && (!j["top_p"].is_number() || j["top_p"].get<double>() != 1))
    bad("top_p", shown(j["top_p"]) + ": kvfuse decodes greedily; send 1 or leave it out");
  if (j.contains("n") && !j["n"].is_null() && int_field(j["n"], "n", 1, 1) != 1) bad("n", "only 1 is served");
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json& stop = j["stop"];
    if (stop.is_string()) {
      r.options.stop.push_back(stop.get<std::string>());
    } else if (stop.is_array() && stop.size() <= 4) {
      for (size_t i = 0; i < stop.size(); ++i)
        r.options.stop.push_back(text_field(stop[i], "stop[" + std::to_string(i) + "]"));
    } else {
      bad("stop", shown(stop) + " is neither a string nor a list of at most 4 strings");
    }
  }
  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) bad("stream", shown(j["stream"]) + " is not true or false");
    r.stream = j["stream"].get<bool>();
  }
  if (j.contains("stream_options") && j["stream_options"].is_object())
    r.include_usage = j["stream_options"].value("include_usage", false);
  if (j.contains("kvfuse") && !j["kvfuse"].is_null()) read_kvfuse(j["kvfuse"], d, r);
  return r;
}

RetrieveRequest parse_retrieve_request(const std::string& body, const ServeDefaults& d) {
  const json j = parse_object(body);
  RetrieveRequest r;
  r.top_k = d.top_k;
  for (const auto& [key, value] : j.items())
    if (key != "query" && key != "top_k") bad(key, "unknown field (/v1/retrieve takes query and top_k)");
  if (!j.contains("query")) bad("query", "missing: give the text to search for");
  r.query = text_field(j["query"], "query");
  if (r.query.find_first_not_of(" \t\r\n") == std::string::npos) bad("query", "is empty");
  if (j.contains("top_k")) r.top_k = int_field(j["top_k"], "top_k", 1, 100);
  return r;
}

}  // namespace kvf
