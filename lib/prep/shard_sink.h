// Writes one KV mode's shards as they fill, committing each shard and then the manifest that records it
// (DESIGN.md §4's commit protocol), so a killed run resumes after the last committed shard.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "store/chunk_kv.h"
#include "store/kv_shard.h"
#include "store/manifest.h"

namespace kvf {

class ShardSink {
 public:
  // Shards are numbered on from those of the mode the manifest already records.
  ShardSink(const std::string& store_dir, Manifest& manifest, KvShardLayout layout, uint64_t shard_bytes,
            int deflate_level = 0);
  void add(uint64_t chunk_id, const HostKv& kv, uint64_t context = 0);  // flushes once shard_bytes are held
  void flush();                                                         // commits what is held, if anything
  // The stage's end: flushes, then records the stage (its inputs: the chunk table's) and saves the manifest.
  void finish_stage(const std::string& stage, std::map<std::string, uint64_t> counts);
  uint64_t written() const { return written_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string dir_;
  Manifest& m_;
  KvShardLayout layout_;
  uint64_t shard_bytes_;
  size_t next_;
  int deflate_level_;
  KvShardWriter writer_;
  uint64_t written_ = 0, bytes_ = 0;
};

}  // namespace kvf
