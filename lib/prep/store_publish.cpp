#include "prep/store_publish.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "store/store_files.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// Why the working tables (chunks.h5, index.faiss) cannot be published yet: the index does not cover the chunk
// table, or a stored KV mode lacks chunks of it (a prefill limited to some documents over the current corpus,
// as kvrun eval builds a store, counts as complete: its missing chunks were left out on purpose). "" when they
// can.
std::string why_not_complete(const std::string& dir, const Manifest& m) {
  const CommittedFile *chunks = m.find_file(kChunksFile), *index = m.find_file(kIndexFile),
                      *embeddings = m.find_file(kEmbeddingsFile);
  const StageRecord *chunk_stage = m.find_stage("chunk"), *embed = m.find_stage("embed"),
                    *index_stage = m.find_stage("index");
  if (!chunks || !index || !embeddings || !chunk_stage || !embed || !index_stage) return "no index yet";
  if (chunks->replacing || index->replacing || embeddings->replacing) return "a table is being replaced";
  // The index stage read these embeddings, and the embed stage this chunk table.
  if (index_stage->inputs_hash != embeddings->xxh3 || embed->inputs_hash != chunks->xxh3)
    return "the index is older than the chunk table";
  const std::vector<uint64_t> ids = ChunkTable::read_ids(store_file_path(dir, kChunksFile));
  const auto vectors = index_stage->counts.find("vectors");
  if (vectors == index_stage->counts.end() || vectors->second != ids.size())
    return "the index does not hold every chunk";
  for (const StageRecord& s : m.stages) {
    std::string mode;
    if (s.stage.rfind("prefill-", 0) == 0) mode = s.stage.substr(8);
    if (s.stage.rfind("compress-", 0) == 0) mode = s.stage.substr(9);
    if (mode.empty()) continue;
    const auto missing = s.counts.find("missing");
    if (missing != s.counts.end() && missing->second > 0 && s.inputs_hash == chunk_stage->inputs_hash)
      continue;  // a prefill limited to some documents of this corpus: complete as asked
    const KvModeReader kv(dir, m, mode, m.model_fingerprint);
    const size_t lacking = (size_t)std::count_if(ids.begin(), ids.end(), [&](uint64_t id) { return !kv.contains(id); });
    if (lacking) return std::to_string(lacking) + " chunks have no '" + mode + "' KV yet";
  }
  return "";
}

// <dir>/<to> as a second name of <dir>/<from> (a copy, synced, where hard links fail), replacing what a killed
// writer may have left there.
void link_or_copy(const std::string& dir, const std::string& from, const std::string& to) {
  const std::string src = (fs::path(dir) / from).string(), dst = (fs::path(dir) / to).string();
  if (::unlink(dst.c_str()) != 0 && errno != ENOENT) fail(dst, ": cannot remove: ", std::strerror(errno));
  if (::link(src.c_str(), dst.c_str()) == 0) return;
  std::error_code ec;
  fs::copy_file(src, dst, ec);
  KVF_CHECK(!ec, dst, ": cannot link or copy ", src, ": ", ec.message());
  sync_path(dst, O_RDONLY);
}

}  // namespace

PublishResult publish_store_generation(const std::string& dir) {
  Manifest m = load_manifest(dir);
  PublishResult res;
  res.generation = m.published.number;
  res.waiting = why_not_complete(dir, m);
  const CommittedFile* chunks = m.find_file(kChunksFile);
  const CommittedFile* index = m.find_file(kIndexFile);
  const CommittedFile* pub_chunks = m.published.number ? m.find_file(m.published.chunks) : nullptr;
  const CommittedFile* pub_index = m.published.number ? m.find_file(m.published.index) : nullptr;
  const auto same = [](const CommittedFile* a, const CommittedFile* b) {
    return a && b && a->bytes == b->bytes && a->xxh3 == b->xxh3;
  };
  const bool same_settings = m.settings.contains("index") && m.published.index_settings == m.settings["index"];
  if (res.waiting.empty() && !(same(chunks, pub_chunks) && same(index, pub_index) && same_settings)) {
    const uint64_t g = m.published.number + 1;
    const std::string c = generation_file_name(kChunksFile, g), i = generation_file_name(kIndexFile, g);
    link_or_copy(dir, kChunksFile, c);
    link_or_copy(dir, kIndexFile, i);
    sync_path(dir, O_RDONLY | O_DIRECTORY);
    CommittedFile cr = *chunks, ir = *index;
    cr.path = c;
    ir.path = i;
    m.record_file(cr);
    m.record_file(ir);
    m.published = {g, c, i, m.settings.at("index")};
    // Kept: this generation and the one before, for readers that loaded the manifest just before this commit.
    m.files.erase(std::remove_if(m.files.begin(), m.files.end(),
                                 [&](const CommittedFile& f) {
                                   const uint64_t fg = generation_of_file(f.path);
                                   return fg != 0 && fg + 1 < g;
                                 }),
                  m.files.end());
    save_manifest(dir, m);
    res.generation = g;
    res.published = true;
  }
  // Generation files the manifest no longer lists (reclaimed above, or left by a killed writer) go.
  std::error_code ec;
  bool removed = false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (generation_of_file(name) == 0 || m.find_file(name)) continue;
    std::error_code rm;
    if (fs::remove(entry.path(), rm)) {
      res.removed.push_back(name);
      removed = true;
    }
  }
  if (removed) sync_path(dir, O_RDONLY | O_DIRECTORY);
  std::sort(res.removed.begin(), res.removed.end());
  return res;
}

}  // namespace kvf
