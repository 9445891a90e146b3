#include "prep/store_report.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/hex.h"
#include "model/fingerprint.h"
#include "prep/retrieval_stages.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/embedding_table.h"
#include "store/kv_shard.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"
#include "store/store_files.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// XXH3 of the (chunk id, checksum) pairs in id order: equal for equal KV content, however it was sharded.
uint64_t content_hash(const std::map<uint64_t, uint64_t>& checksums) {
  std::vector<uint64_t> flat;
  for (const auto& [id, sum] : checksums) {
    flat.push_back(id);
    flat.push_back(sum);
  }
  return XXH3_64bits(flat.data(), flat.size() * sizeof(uint64_t));
}

}  // namespace

const char* problem_kind_name(ProblemKind kind) { return kind == ProblemKind::Unreadable ? "unreadable" : "damaged"; }

namespace {

// The problem an exception from reading `file` makes: UnreadableFile says the file could not be read at all.
StoreProblem problem_from(const std::string& file, const std::exception& e) {
  const bool unreadable = dynamic_cast<const UnreadableFile*>(&e) != nullptr;
  return {file, e.what(), unreadable ? ProblemKind::Unreadable : ProblemKind::Damaged};
}

// Each committed file's size and hash against its record, and a KV shard's every chunk.
void verify_committed_files(const std::string& dir, const Manifest& m, std::vector<StoreProblem>& problems) {
  for (const CommittedFile& f : m.files) {
    const std::string path = (fs::path(dir) / f.path).string();
    try {
      const CommittedFile now = describe_file(dir, f.path);
      if (!f.accepts(now.bytes, now.xxh3)) {
        problems.push_back({f.path, path + ": " + std::to_string(now.bytes) + " bytes, xxh3 " + hex64(now.xxh3) +
                                        "; the manifest recorded " + std::to_string(f.bytes) + " bytes, xxh3 " +
                                        hex64(f.xxh3)});
      }
    } catch (const std::exception& e) {
      problems.push_back(problem_from(f.path, e));
      continue;
    }
    if (!kv_mode_of_shard(f.path).empty()) {
      for (std::string& p : verify_kv_shard(path, m.model_fingerprint)) problems.push_back({f.path, std::move(p)});
    }
  }
}

// The tables must agree with each other, row for row: a table that does not condemns itself. Tables already
// found unreadable are left out.
void verify_tables_agree(const std::string& dir, const Manifest& m, std::vector<StoreProblem>& problems) {
  std::set<std::string> unreadable;
  for (const StoreProblem& p : problems)
    if (p.kind == ProblemKind::Unreadable) unreadable.insert(p.file);
  if (unreadable.count(kChunksFile)) return;
  std::string at = kChunksFile;
  try {
    require_readable(dir, kChunksFile);
    const ChunkTable chunks = ChunkTable::read(store_file_path(dir, kChunksFile));
    if (chunks.model_fingerprint() != m.model_fingerprint)
      problems.push_back({kChunksFile, dir + "/" + kChunksFile + ": model fingerprint " +
                                           hex64(chunks.model_fingerprint()) + ", the manifest's " +
                                           hex64(m.model_fingerprint)});
    // Rows follow the chunk table's order; a stage not yet rerun after a grown corpus, or an embed checkpoint,
    // covers only some of its chunks.
    const auto same_ids = [&](const std::vector<uint64_t>& ids, const char* file) {
      size_t row = 0;
      for (const uint64_t id : ids) {
        while (row < chunks.size() && chunks.chunks()[row].id != id) ++row;
        if (row++ == chunks.size()) {
          problems.push_back({file, dir + "/" + file + ": its chunk ids are not the chunk table's, in its order"});
          return;
        }
      }
    };
    for (const char* file : {kEmbeddingsFile, kNeighborsFile}) {
      at = file;
      if (unreadable.count(file) || !fs::exists(fs::path(dir) / file)) continue;
      require_readable(dir, file);
      const std::string path = store_file_path(dir, file);
      const bool embeddings = std::string(file) == kEmbeddingsFile;
      same_ids(embeddings ? EmbeddingTable::read(path).chunk_ids : NeighborTable::read(path).chunk_ids, file);
    }
  } catch (const std::exception& e) {
    problems.push_back(problem_from(at, e));
  }
}

}  // namespace

std::vector<StoreProblem> verify_store(const std::string& dir) {
  Manifest m;
  try {
    m = load_manifest(dir);
  } catch (const std::exception& e) {
    return {problem_from("", e)};
  }
  std::vector<StoreProblem> problems;
  verify_committed_files(dir, m, problems);
  verify_tables_agree(dir, m, problems);
  return problems;
}

std::vector<std::string> unlisted_store_files(const std::string& dir) {
  std::set<std::string> listed;
  try {
    for (const CommittedFile& f : load_manifest(dir).files) listed.insert(f.path);
  } catch (const std::exception&) {  // verify reports the manifest itself
  }
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    const std::string ext = it->path().extension().string();
    const bool data = rel.rfind("kv/", 0) == 0 || (it.depth() == 0 && (ext == ".h5" || ext == ".faiss"));
    if (it->is_directory(ec) || !data || is_store_temporary(rel) || listed.count(rel)) continue;
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> incomplete_stages(const std::string& dir) {
  std::vector<std::string> out;
  for (const StageRecord& r : load_manifest(dir).stages) {
    const auto missing = r.counts.find("missing"), chunks = r.counts.find("chunks");
    if (missing == r.counts.end() || chunks == r.counts.end() || r.stage.rfind("prefill-", 0) != 0) continue;
    out.push_back(dir + ": " + r.stage + ": " + std::to_string(missing->second) + " of " +
                  std::to_string(chunks->second) + " chunks have no KV yet (a store built in part, e.g. by kvrun " +
                  "eval); `kvprep prefill --mode " + r.stage.substr(8) + "` completes it");
  }
  return out;
}

namespace {

// "zstd:19", or the names joined with commas when a mode's shards differ (reruns with another --entropy).
std::string entropy_names(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

}  // namespace

nlohmann::json inspect_store(const std::string& dir) {
  const Manifest m = load_manifest(dir);
  const ChunkTable chunks = ChunkTable::read((fs::path(dir) / kChunksFile).string());
  nlohmann::json out = {{"store", dir},
                        {"model", m.model_name},
                        {"model_fingerprint", hex64(m.model_fingerprint)},
                        {"chunks", chunks.size()},
                        {"tokens", chunks.n_tokens()},
                        {"settings", m.settings},
                        {"stages", nlohmann::json::object()},
                        {"kv", nlohmann::json::object()}};
  for (const StageRecord& s : m.stages) out["stages"][s.stage] = {{"completed_at", s.completed_at}, {"counts", s.counts}};
  struct ModeTotals {
    uint64_t rows = 0, bytes = 0, shards = 0;
    std::map<uint64_t, uint64_t> checksums;  // chunk id -> KV checksum: content, whatever the shard boundaries
    std::string dtype;
    int stored_layers = 0, model_layers = 0;
    double kv_bytes = 0;  // K, V, scales and positions of the mode's stored chunks, without the files' overhead
    double every_layer_row_bytes = 0;  // one row's K, V and position with every model layer stored in f16/bf16
    uint64_t stored_kv_bytes = 0;      // what K, V, scales or low-bit bytes and positions take in the files
    std::set<std::string> entropy;     // how the shards keep them (h5::compression_name), one name unless mixed
  };
  std::map<std::string, ModeTotals> modes;
  uint64_t total_bytes = 0;
  for (const CommittedFile& f : m.files) {
    total_bytes += f.bytes;
    if (kv_mode_of_shard(f.path).empty()) continue;
    const KvShardReader shard = KvShardReader::open(store_file_path(dir, f.path), m.model_fingerprint);
    ModeTotals& t = modes[kv_mode_of_shard(f.path)];
    t.dtype = kv_dtype_name(shard.layout().dtype);
    t.stored_layers = shard.layout().stored_layers;
    KvShardLayout every_layer = shard.layout();
    every_layer.stored_layers = every_layer.n_layers;
    t.model_layers = every_layer.n_layers;
    t.every_layer_row_bytes = every_layer.bytes_per_row();
    t.shards += 1;
    t.bytes += f.bytes;
    t.stored_kv_bytes += shard.stored_kv_bytes();
    t.entropy.insert(h5::compression_name(shard.compression()));
    for (const KvChunkEntry& e : shard.index()) {
      t.rows += e.rows;
      t.checksums[e.chunk_id] = e.checksum;
      // Low-bit chunks' bytes depend on their length (groups, kept f16 rows): counted exactly.
      t.kv_bytes += shard.layout().low_bit()
                        ? (double)low_bit_chunk_bytes(shard.layout().low_bit_spec(), e.rows, shard.layout().row_elems()) +
                              4.0 * e.rows
                        : shard.layout().bytes_per_row() * e.rows;
    }
  }
  for (const auto& [mode, t] : modes) {
    // Tokens are the chunks' own (a compressed chunk keeps fewer rows than it has tokens); S is no chunk.
    uint64_t tokens = 0;
    for (const auto& [id, sum] : t.checksums) {
      const ChunkRecord* chunk = chunks.find(id);
      tokens += chunk ? chunk->tokens.size() : 0;
    }
    if (tokens == 0) tokens = t.rows;
    out["kv"][mode] = {{"shards", t.shards},
                       {"chunks", t.checksums.size()},  // distinct: a recomputed chunk's newer rows replace its older
                       {"rows", t.rows},
                       {"tokens", tokens},
                       {"dtype", t.dtype},
                       {"stored_layers", t.stored_layers},
                       {"bytes", t.bytes},
                       {"bytes_per_token", tokens ? (double)t.bytes / (double)tokens : 0.0},
                       {"model_layers", t.model_layers},
                       {"kv_bytes_per_token", tokens ? t.kv_bytes / (double)tokens : 0.0},
                       {"kv_bytes_per_token_every_layer", t.every_layer_row_bytes},
                       // Memory: what a reader holds per token (kv_bytes_per_token); disk: the same KV and
                       // positions as the shards store them, after their entropy coding (file overhead excluded).
                       {"entropy", entropy_names(t.entropy)},
                       {"disk_kv_bytes_per_token", tokens ? (double)t.stored_kv_bytes / (double)tokens : 0.0},
                       {"content_hash", hex64(content_hash(t.checksums))}};
  }
  out["bytes"] = total_bytes;
  return out;
}

}  // namespace kvf
