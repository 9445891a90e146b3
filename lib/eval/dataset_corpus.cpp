#include "eval/dataset_corpus.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"

namespace kvf {

size_t write_dataset_corpus(const std::vector<QueryRecord>& records, const std::string& path) {
  std::set<std::pair<std::string, std::string>> seen;
  std::ostringstream text;
  for (const QueryRecord& r : records)
    for (const Passage& p : r.query.contexts) {
      if (!seen.insert({p.title, p.text}).second) continue;
      text << "{\"id\": " << seen.size() << ", \"title\": " << nlohmann::json(p.title).dump()
           << ", \"text\": " << nlohmann::json(p.text).dump() << "}\n";
    }
  KVF_CHECK(!seen.empty(), path, ": the data set's questions carry no contexts to build a store from");
  const std::string body = text.str();
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    const std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have == body) return seen.size();
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
  return seen.size();
}

}  // namespace kvf
