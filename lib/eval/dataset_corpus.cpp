#include "eval/dataset_corpus.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/file_roles.h"

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

// The file's text, "" when it does not exist.
std::string read_existing(const std::string& path) {
  return file_kind(path) == "missing" ? "" : read_regular_file(path);
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
  const std::string have = read_existing(path);
  if (have.empty() || (body.size() > have.size() && body.compare(0, have.size(), have) == 0)) {
    if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty())
      std::filesystem::create_directories(dir);
    write_output_file(path, body);  // new, or more of this data set's questions than last time
  } else {
    // Passages are numbered in first-seen order, so fewer questions of the same data set give a prefix: the file
    // there already holds them. Anything else is not this command's file, and is kept.
    KVF_CHECK(have.compare(0, body.size(), body) == 0, path, " exists and does not hold this data set's passages "
              "(kvrun eval --build-store writes it from the questions' contexts, and replaces only its own); move "
              "it away or build into another folder");
  }
  return passages;
}

}  // namespace kvf
