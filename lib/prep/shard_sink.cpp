#include "prep/shard_sink.h"

#include <filesystem>

#include "core/error.h"
#include "core/hex.h"
#include "prep/store_report.h"

namespace kvf {

namespace fs = std::filesystem;

ShardSink::ShardSink(const std::string& dir, Manifest& m, KvShardLayout layout, uint64_t shard_bytes,
                     h5::Compression compression, const Cluster& ranks)
    : dir_(dir), m_(m), ranks_(ranks), layout_(std::move(layout)), shard_bytes_(shard_bytes),
      next_(next_kv_shard_number(m, layout_.mode)), compression_(compression), writer_(layout_) {
  writer_.set_compression(compression_);
}

void ShardSink::add(uint64_t chunk_id, const HostKv& kv, uint64_t context, const std::vector<double>& anchor_scores) {
  KVF_CHECK(anchor_scores.empty() || (int64_t)anchor_scores.size() == kv.rows, "chunk ", chunk_id, ": ",
            anchor_scores.size(), " anchor scores for ", kv.rows, " rows");
  try {
    writer_.add_chunk(chunk_id, kv.k.data(), kv.v.data(), kv.positions.data(), (uint32_t)kv.rows, context,
                      anchor_scores.empty() ? nullptr : anchor_scores.data());
  } catch (const Error& e) {  // nothing of the chunk was kept: name whose KV it was
    fail("store ", dir_, ": ", layout_.mode, " KV of model ", m_.model_name.empty() ? "?" : m_.model_name,
         " (fingerprint ", hex64(layout_.model_fingerprint), "): ", e.what());
  }
  if (ranks_.alone() && writer_.bytes() >= shard_bytes_) flush();
}

std::string ShardSink::write_held(size_t number) {
  const std::string name = kv_shard_name(layout_.mode, number);
  fs::create_directories(fs::path(dir_) / "kv");
  writer_.write((fs::path(dir_) / name).string());
  bytes_ += writer_.bytes();
  file_bytes_ += fs::file_size(fs::path(dir_) / name);
  ++written_;
  writer_ = KvShardWriter(layout_);
  writer_.set_compression(compression_);
  return name;
}

void ShardSink::flush() {
  if (writer_.chunks() == 0) return;
  m_.record_file(describe_file(dir_, write_held(next_++)));
  save_manifest(dir_, m_);  // the shard is committed: a killed run resumes after it
}

void ShardSink::end_round(size_t round) {
  const Cluster& cluster = ranks_;
  if (cluster.alone()) return;
  MessageWriter mine;  // the committed-file record of this rank's shard, if it wrote one
  if (writer_.chunks() > 0) {
    const CommittedFile f = describe_file(dir_, write_held(next_ + round * (size_t)cluster.size() + cluster.rank()));
    mine.put_string(f.path);
    mine.put(f.bytes);
    mine.put(f.xxh3);
  }
  bool recorded = false;
  for (const std::vector<uint8_t>& message : cluster.gather(mine.bytes())) {
    MessageReader in(message);
    while (!in.done()) {
      CommittedFile f;
      f.path = in.get_string();
      f.bytes = in.get<uint64_t>();
      f.xxh3 = in.get<uint64_t>();
      m_.record_file(f);
      recorded = true;
    }
  }
  if (recorded) save_manifest(dir_, m_);  // every rank's shard of the round is durable: commit them together
}

void ShardSink::finish_stage(const std::string& stage, std::map<std::string, uint64_t> counts) {
  const Cluster& cluster = ranks_;
  if (cluster.alone()) flush();
  if (cluster.leader()) {
    m_.record_stage({stage, utc_timestamp(), m_.find_stage("chunk")->inputs_hash, std::move(counts)});
    save_manifest(dir_, m_);
  }
  cluster.barrier();
}

void remove_unlisted_shards(const Cluster& cluster, const std::string& store_dir, const std::string& mode) {
  if (cluster.alone()) return;  // alone, a rerun writes the same numbers again and replaces them
  if (cluster.leader())
    for (const std::string& path : unlisted_store_files(store_dir))
      if (kv_mode_of_shard(path) == mode) fs::remove(fs::path(store_dir) / path);
  cluster.barrier();
}

}  // namespace kvf
