#include "eval/dataset_corpus.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace kvf {
namespace {

// Every distinct (title, text) gets the next id, in first-seen order; `on_new` sees each new passage once.
template <typename OnNew>
std::vector<std::vector<std::string>> number_passages(const std::vector<QueryRecord>& records, OnNew on_new) {
  std::map<std::pair<std::string, std::string>, size_t> ids;
  std::vector<std::vector<std::string>> per_record;
  for (const QueryRecord& r : records) {
    per_record.emplace_back();
    for (const Passage& p : r.query.contexts) {
      const auto [it, added] = ids.insert({{p.title, p.text}, ids.size() + 1});
      if (added) on_new(it->second, p);
      per_record.back().push_back(std::to_string(it->second));
    }
  }
  return per_record;
}

}  // namespace

std::vector<std::vector<std::string>> dataset_corpus_ids(const std::vector<QueryRecord>& records) {
  return number_passages(records, [](size_t, const Passage&) {});
}

size_t write_dataset_corpus(const std::vector<QueryRecord>& records, const std::string& path) {
  std::ostringstream text;
  size_t passages = 0;
  number_passages(records, [&](size_t id, const Passage& p) {
    text << "{\"id\": " << id << ", \"title\": " << nlohmann::json(p.title).dump()
         << ", \"text\": " << nlohmann::json(p.text).dump() << "}\n";
    passages = id;
  });
  KVF_CHECK(passages > 0, path, ": the data set's questions carry no contexts to build a store from");
  const std::string body = text.str();
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    const std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have == body) return passages;
  }
  if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir);
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << body;
    out.close();
    KVF_CHECK(out, partial, ": write failed");
  }
  std::filesystem::rename(partial, path);
  return passages;
}

}  // namespace kvf
