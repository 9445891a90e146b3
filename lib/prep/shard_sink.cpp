#include "prep/shard_sink.h"

#include <filesystem>

namespace kvf {

namespace fs = std::filesystem;

ShardSink::ShardSink(const std::string& dir, Manifest& m, KvShardLayout layout, uint64_t shard_bytes,
                     int deflate_level)
    : dir_(dir), m_(m), layout_(std::move(layout)), shard_bytes_(shard_bytes),
      next_(next_kv_shard_number(m, layout_.mode)), deflate_level_(deflate_level), writer_(layout_) {
  writer_.set_deflate_level(deflate_level_);
}

void ShardSink::add(uint64_t chunk_id, const HostKv& kv, uint64_t context) {
  writer_.add_chunk(chunk_id, kv.k.data(), kv.v.data(), kv.positions.data(), (uint32_t)kv.rows, context);
  if (writer_.bytes() >= shard_bytes_) flush();
}

void ShardSink::flush() {
  if (writer_.chunks() == 0) return;
  const std::string name = kv_shard_name(layout_.mode, next_++);
  fs::create_directories(fs::path(dir_) / "kv");
  writer_.write((fs::path(dir_) / name).string());
  bytes_ += writer_.bytes();
  m_.record_file(describe_file(dir_, name));
  save_manifest(dir_, m_);  // the shard is committed: a killed run resumes after it
  ++written_;
  writer_ = KvShardWriter(layout_);
  writer_.set_deflate_level(deflate_level_);
}

void ShardSink::finish_stage(const std::string& stage, std::map<std::string, uint64_t> counts) {
  flush();
  m_.record_stage({stage, utc_timestamp(), m_.find_stage("chunk")->inputs_hash, std::move(counts)});
  save_manifest(dir_, m_);
}

}  // namespace kvf
