#include "prep/store_prune.h"

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "io/durable_file.h"
#include "prep/store_report.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/kv_shard.h"
#include "store/manifest.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// Every chunk a reader can reach: the working chunk table's and the published generation's.
std::unordered_set<uint64_t> reachable_chunks(const std::string& dir, const Manifest& m) {
  std::unordered_set<uint64_t> live;
  for (const std::string& table : {std::string(kChunksFile), m.published.number ? m.published.chunks : ""}) {
    if (table.empty() || !m.find_file(table)) continue;
    for (const uint64_t id : ChunkTable::read_ids(store_file_path(dir, table))) live.insert(id);
  }
  return live;
}

// The KV modes the manifest lists shards of, in the order it lists them; the system prompt's mode left out.
std::vector<std::string> prunable_modes(const Manifest& m) {
  std::vector<std::string> modes;
  for (const CommittedFile& f : m.files) {
    const std::string mode = kv_mode_of_shard(f.path);
    if (!mode.empty() && mode != kSystemKvMode && std::find(modes.begin(), modes.end(), mode) == modes.end())
      modes.push_back(mode);
  }
  return modes;
}

// Refuses what drop_modes cannot name: the system prompt's KV, or a mode the store neither lists nor completed.
void check_drop_modes(const std::string& dir, const Manifest& m, const std::vector<std::string>& drop_modes) {
  const std::vector<std::string> held = prunable_modes(m);
  std::string held_names;
  for (const std::string& h : held) held_names += (held_names.empty() ? "" : ", ") + h;
  for (const std::string& mode : drop_modes) {
    KVF_CHECK(mode != kSystemKvMode, "--drop-mode: the system prompt's KV ('", mode, "') is read by every mode");
    KVF_CHECK(std::find(held.begin(), held.end(), mode) != held.end() || kv_mode_completed(m, mode), dir,
              ": --drop-mode: the store holds no '", mode, "' KV (it holds: ",
              held_names.empty() ? "none" : held_names, ")");
  }
}

// A mode dropped whole: its shards go, and its completion, so that nothing reads it as complete.
void drop_mode(const std::string& dir, const std::string& mode, Manifest& m, std::vector<std::string>& replaced,
               PruneResult& res) {
  for (const CommittedFile& f : m.files) {
    if (kv_mode_of_shard(f.path) != mode) continue;
    res.mode_entries += KvShardReader::open(store_file_path(dir, f.path), m.model_fingerprint).index().size();
    res.bytes_before += f.bytes;
    ++res.shards_removed;
    replaced.push_back(f.path);
  }
  const auto completes_mode = [&](const StageRecord& s) {
    return s.stage == "prefill-" + mode || s.stage == "compress-" + mode;
  };
  m.stages.erase(std::remove_if(m.stages.begin(), m.stages.end(), completes_mode), m.stages.end());
  res.modes.push_back(mode);
}

struct ListedShard {
  CommittedFile record;
  KvShardReader reader;
};

// One mode's shards: which entries stay (the chunk is reachable and this is its last entry, the one readers use),
// and the shards to rewrite or remove. Appends new shard records to `m`, the replaced shards' paths to `replaced`.
void prune_mode(const std::string& dir, const std::string& mode, const std::unordered_set<uint64_t>& live,
                bool dry_run, Manifest& m, std::vector<std::string>& replaced, PruneResult& res) {
  std::vector<ListedShard> shards;
  for (const CommittedFile& f : m.files)
    if (kv_mode_of_shard(f.path) == mode)
      shards.push_back({f, KvShardReader::open(store_file_path(dir, f.path), m.model_fingerprint)});
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> last;  // as KvModeReader resolves a chunk
  for (size_t s = 0; s < shards.size(); ++s)
    for (size_t e = 0; e < shards[s].reader.index().size(); ++e) last[shards[s].reader.index()[e].chunk_id] = {s, e};
  size_t next = next_kv_shard_number(m, mode);
  bool reclaimed = false;
  for (size_t s = 0; s < shards.size(); ++s) {
    const KvShardReader& reader = shards[s].reader;
    const std::vector<KvChunkEntry>& index = reader.index();
    std::vector<size_t> keep;
    uint64_t kept_rows = 0, rows = 0;
    for (size_t e = 0; e < index.size(); ++e) {
      rows += index[e].rows;
      if (!live.count(index[e].chunk_id)) {
        ++res.dropped;
      } else if (last.at(index[e].chunk_id) != std::make_pair(s, e)) {
        ++res.superseded;
      } else {
        keep.push_back(e);
        kept_rows += index[e].rows;
      }
    }
    res.kept += keep.size();
    res.bytes_before += shards[s].record.bytes;
    if (keep.size() == index.size()) {
      res.bytes_after += shards[s].record.bytes;
      continue;
    }
    reclaimed = true;
    replaced.push_back(shards[s].record.path);
    if (keep.empty()) {
      ++res.shards_removed;
      continue;
    }
    ++res.shards_rewritten;
    if (dry_run) {  // an estimate: the rows kept, at the shard's bytes per row
      res.bytes_after += shards[s].record.bytes * kept_rows / std::max<uint64_t>(1, rows);
      continue;
    }
    KvShardWriter writer(reader.layout());
    writer.set_compression(reader.compression());
    RawKvChunk raw;
    for (const size_t e : keep) {
      reader.read_raw(e, raw);
      writer.add_stored_chunk(reader, raw, reader.read_anchor_scores(e));
    }
    const std::string name = kv_shard_name(mode, next++);
    writer.write((fs::path(dir) / name).string());
    const CommittedFile written = describe_file(dir, name);
    res.bytes_after += written.bytes;
    m.record_file(written);
  }
  if (reclaimed) res.modes.push_back(mode);
}

}  // namespace

PruneResult prune_store(const PruneOptions& o) {
  const std::string& dir = o.store_dir;
  Manifest m = load_manifest(dir);
  PruneResult res;
  if (!o.dry_run)  // shards a killed prune or prefill wrote but never committed
    for (const std::string& path : unlisted_store_files(dir))
      if (!kv_mode_of_shard(path).empty()) fs::remove(fs::path(dir) / path);
  check_drop_modes(dir, m, o.drop_modes);
  std::vector<std::string> replaced;
  for (const std::string& mode : o.drop_modes) drop_mode(dir, mode, m, replaced, res);
  if (m.find_file(kChunksFile)) {
    const std::unordered_set<uint64_t> live = reachable_chunks(dir, m);
    for (const std::string& mode : prunable_modes(m))
      if (std::find(o.drop_modes.begin(), o.drop_modes.end(), mode) == o.drop_modes.end())
        prune_mode(dir, mode, live, o.dry_run, m, replaced, res);
  }
  if (o.dry_run || (replaced.empty() && o.drop_modes.empty())) return res;
  const std::unordered_set<std::string> gone(replaced.begin(), replaced.end());
  m.files.erase(std::remove_if(m.files.begin(), m.files.end(), [&](const CommittedFile& f) { return gone.count(f.path); }),
                m.files.end());
  save_manifest(dir, m);  // the commit: from here readers open the new shards
  for (const std::string& path : replaced) fs::remove(fs::path(dir) / path);
  sync_path((fs::path(dir) / "kv").string(), O_RDONLY | O_DIRECTORY);
  return res;
}

std::string describe_prune(const PruneResult& r) {
  if (r.dropped + r.superseded + r.mode_entries == 0 && r.modes.empty()) return "nothing to reclaim";
  const auto mb = [](uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MB"; };
  std::string whole;
  if (!r.modes.empty() && r.mode_entries > 0) whole = std::to_string(r.mode_entries) + " KV entries of dropped modes, ";
  return whole + std::to_string(r.dropped) + " KV entries of removed chunks and " + std::to_string(r.superseded) +
         " superseded ones reclaimed (" + std::to_string(r.shards_rewritten) + " shards rewritten, " +
         std::to_string(r.shards_removed) + " removed): KV " + mb(r.bytes_before) + " -> " + mb(r.bytes_after);
}

}  // namespace kvf
