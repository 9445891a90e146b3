#include "fusion/query_file.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/hex.h"
#include "io/text_lines.h"

namespace kvf {
namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

std::string text_field(const nlohmann::json& j, const char* key, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    KVF_CHECK(!required, "missing \"", key, "\"");
    return "";
  }
  KVF_CHECK(j[key].is_string(), "\"", key, "\" must be a string, got ", j[key].dump().substr(0, 60));
  return j[key].get<std::string>();
}

QueryRecord parse_record(const std::string& line_text, size_t line) {
  QueryRecord r;
  r.line = line;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number too large
    fail("not JSON (", e.what(), ")");
  }
  KVF_CHECK(j.is_object(), "expected a JSON object, got ", line_text.substr(0, 60));
  Query& q = r.query;
  if (j.contains("id") && j["id"].is_number_integer())
    q.id = std::to_string(j["id"].get<int64_t>());
  else
    q.id = text_field(j, "id", false);
  if (q.id.empty()) q.id = "line " + std::to_string(line);
  q.question = text_field(j, "question", true);
  require_question_text(q.question, "\"question\"");
  if (j.contains("answers")) {
    KVF_CHECK(j["answers"].is_array(), "\"answers\" must be an array of strings");
    for (const auto& a : j["answers"]) {
      KVF_CHECK(a.is_string(), "\"answers\" must be an array of strings, got ", a.dump().substr(0, 60));
      r.answers.push_back(a.get<std::string>());
    }
  }
  KVF_CHECK(!(j.contains("chunk_ids") && j.contains("contexts")),
            "give \"chunk_ids\" or \"contexts\", not both: which chunks the question reads would be ambiguous");
  if (j.contains("chunk_ids")) {
    KVF_CHECK(j["chunk_ids"].is_array(), "\"chunk_ids\" must be an array of 16-hex-digit strings");
    KVF_CHECK(!j["chunk_ids"].empty(), "\"chunk_ids\" is empty; leave it out to retrieve the question's chunks");
    for (size_t i = 0; i < j["chunk_ids"].size(); ++i) {
      const auto& id = j["chunk_ids"][i];
      KVF_CHECK(id.is_string(), "\"chunk_ids\"[", i, "] must be a string, got ", id.dump().substr(0, 60));
      q.chunk_ids.push_back(parse_hex64(id.get<std::string>(), "\"chunk_ids\"[" + std::to_string(i) + "]"));
    }
  }
  if (j.contains("contexts")) {
    KVF_CHECK(j["contexts"].is_array(), "\"contexts\" must be an array of {\"title\", \"text\"} objects");
    KVF_CHECK(!j["contexts"].empty(), "\"contexts\" is empty; leave it out to retrieve the question's chunks");
    for (size_t i = 0; i < j["contexts"].size(); ++i) {
      const auto& c = j["contexts"][i];
      KVF_CHECK(c.is_object(), "\"contexts\"[", i, "] must be an object with \"text\"");
      Passage p{text_field(c, "title", false), text_field(c, "text", true)};
      KVF_CHECK(!blank(p.text), "\"contexts\"[", i, "].text is ", p.text.empty() ? "empty" : "only whitespace",
                ": a passage needs text");
      q.contexts.push_back(std::move(p));
    }
  }
  if (j.contains("gold_ctx_idx")) {
    const auto& gold = j["gold_ctx_idx"];
    KVF_CHECK(gold.is_array(), "\"gold_ctx_idx\" must be an array of passage indices");
    for (size_t i = 0; i < gold.size(); ++i) {
      const bool valid = gold[i].is_number_integer() && gold[i].get<int64_t>() >= 0 &&
                         gold[i].get<int64_t>() < (int64_t)q.contexts.size();
      KVF_CHECK(valid, "\"gold_ctx_idx\"[", i, "] must index \"contexts\" (", q.contexts.size(),
                " passages), got ", gold[i].dump().substr(0, 60));
      r.gold_passages.push_back((int32_t)gold[i].get<int64_t>());
    }
  }
  return r;
}

}  // namespace

std::vector<QueryRecord> read_query_file(const std::string& path) {
  const std::string all = read_text_file(path);  // decompressed when gzip; a stream cut short is an error
  std::vector<QueryRecord> records;
  std::vector<std::string> problems;
  std::map<std::string, size_t> line_of_id;  // results are keyed by id: two questions must not share one
  std::istringstream in(all);
  std::string line_text;
  for (size_t line = 1; std::getline(in, line_text); ++line) {
    if (line_text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      QueryRecord record = parse_record(line_text, line);
      const auto [it, added] = line_of_id.insert({record.query.id, line});
      KVF_CHECK(added, "id '", record.query.id, "' is also the id of line ", it->second,
                "; every question needs its own id");
      records.push_back(std::move(record));
    } catch (const Error& e) {
      problems.push_back(path + ":" + std::to_string(line) + ": " + e.what());
    }
  }
  if (problems.size() == 1) fail(problems[0]);
  if (!problems.empty()) {
    std::string message = std::to_string(problems.size()) + " bad line(s) in the question file:";
    for (size_t i = 0; i < problems.size() && i < 20; ++i) message += "\n  " + problems[i];
    if (problems.size() > 20) message += "\n  ... and " + std::to_string(problems.size() - 20) + " more";
    fail(message);
  }
  KVF_CHECK(!records.empty(), path, ": no questions");
  return records;
}

void require_question_text(const std::string& question, const std::string& where) {
  KVF_CHECK(!blank(question), where, " is ", question.empty() ? "empty" : "only whitespace", ": there is nothing to ask");
}

}  // namespace kvf
