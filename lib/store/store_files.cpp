#include "store/store_files.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "io/durable_file.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// Written into the store folder by `kvrun eval --build-store` before its first stage takes the lock.
constexpr const char* kEvalBuildFiles[] = {"corpus.jsonl", "eval-pipeline.yaml"};

bool is_top_level_data(const std::string& name) {
  for (const char* f : {kManifestFile, kChunksFile, kEmbeddingsFile, kIndexFile, kNeighborsFile})
    if (name == f) return true;
  return false;
}

// A name that may sit at the top of a store folder: data, temporaries, the lock, kv/, eval's build inputs.
bool belongs_in_store_folder(const std::string& name) {
  if (is_top_level_data(name) || generation_of_file(name) != 0 || is_store_temporary(name) || name == kStoreLockFile || name == kKvFolder) return true;
  return std::find(std::begin(kEvalBuildFiles), std::end(kEvalBuildFiles), name) != std::end(kEvalBuildFiles);
}

bool process_alive(long pid) { return ::kill((pid_t)pid, 0) == 0 || errno == EPERM; }

}  // namespace

std::string generation_file_name(const std::string& table, uint64_t generation) {
  const size_t dot = table.rfind('.');
  char digits[32];
  std::snprintf(digits, sizeof(digits), ".%05llu", (unsigned long long)generation);
  return table.substr(0, dot) + digits + table.substr(dot);
}

uint64_t generation_of_file(const std::string& relative) {
  for (const char* name : {kChunksFile, kIndexFile}) {
    const std::string table = name;
    const size_t dot = table.rfind('.');
    const std::string stem = table.substr(0, dot + 1), ext = table.substr(dot);
    if (relative.size() < stem.size() + 5 + ext.size() || relative.compare(0, stem.size(), stem) != 0 ||
        relative.compare(relative.size() - ext.size(), ext.size(), ext) != 0)
      continue;
    const std::string digits = relative.substr(stem.size(), relative.size() - stem.size() - ext.size());
    if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const uint64_t g = std::stoull(digits);
    if (g > 0 && generation_file_name(table, g) == relative) return g;
  }
  return 0;
}

bool is_store_data_name(const std::string& relative) {
  return is_top_level_data(relative) || !kv_mode_of_shard(relative).empty() || generation_of_file(relative) != 0;
}

bool is_store_temporary(const std::string& relative) {
  const size_t slash = relative.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : relative.substr(0, slash + 1);
  const std::optional<TempName> t = parse_temp_name(relative.substr(folder.size()));
  return t && is_store_data_name(folder + t->final_name);
}

void require_store_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;  // missing: created as a store; a file: creating the lock names it
  if (fs::exists(fs::path(dir) / kManifestFile, ec) || fs::exists(fs::path(dir) / kStoreLockFile, ec)) return;
  std::vector<std::string> foreign;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!belongs_in_store_folder(name)) foreign.push_back(name + (entry.is_directory(ec) ? "/" : ""));
  }
  KVF_CHECK(!ec, "store ", dir, ": cannot list the folder: ", ec.message());
  if (foreign.empty()) return;
  std::sort(foreign.begin(), foreign.end());
  std::string listed;
  for (size_t i = 0; i < foreign.size() && i < 5; ++i) listed += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 5) listed += ", ...";
  fail("store ", dir, ": the folder is not a kvfuse store (no ", kManifestFile, " or ", kStoreLockFile,
       ") and is not empty: it holds ", foreign.size(), " other entr", foreign.size() == 1 ? "y" : "ies", " (",
       listed, "); kvprep writes a store only into a store, an empty folder or a new one: give another --store");
}

void remove_stale_temporaries(const std::string& dir) {
  for (const std::string& folder : {std::string(), std::string(kKvFolder) + "/"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / folder, ec)) {
      const std::string name = entry.path().filename().string();
      const std::optional<TempName> t = parse_temp_name(name);
      if (!t || !is_store_temporary(folder + name) || !entry.is_regular_file(ec)) continue;
      if (t->pid == (long)::getpid() || process_alive(t->pid)) continue;  // never a file a live process may hold
      fs::remove(entry.path(), ec);
    }
  }
}

}  // namespace kvf
