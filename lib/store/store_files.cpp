#include "store/store_files.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
  if (is_top_level_data(name) || is_store_temporary(name) || name == kStoreLockFile || name == kKvFolder) return true;
  return std::find(std::begin(kEvalBuildFiles), std::end(kEvalBuildFiles), name) != std::end(kEvalBuildFiles);
}

bool process_alive(long pid) { return ::kill((pid_t)pid, 0) == 0 || errno == EPERM; }

}  // namespace

bool is_store_data_name(const std::string& relative) {
  return is_top_level_data(relative) || !kv_mode_of_shard(relative).empty();
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
  for (const std::string folder : {std::string(), std::string(kKvFolder) + "/"}) {
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
