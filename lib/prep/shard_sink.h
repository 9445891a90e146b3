// Writes one KV mode's shards as they fill, committing each shard and then the manifest that records it
// (DESIGN.md §4's commit protocol), so a killed run resumes after the last committed shard.
// With several ranks (cluster/cluster.h) every rank writes its own shards and the leader alone records them:
// work goes in rounds, and at each round's end every rank makes its shard durable and the leader commits the
// manifest that lists them all (docs/scale.md).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "cluster/cluster.h"
#include "store/chunk_kv.h"
#include "store/kv_shard.h"
#include "store/manifest.h"

namespace kvf {

class ShardSink {
 public:
  // Shards are numbered on from those of the mode the manifest already records. `ranks`: the ranks that share
  // the stage (Cluster::world()), or this process alone (the default: work that one rank does by itself).
  ShardSink(const std::string& store_dir, Manifest& manifest, KvShardLayout layout, uint64_t shard_bytes,
            h5::Compression compression = {}, const Cluster& ranks = Cluster::self());
  // Alone, flushes once shard_bytes are held; with several ranks, holds everything until end_round.
  // anchor_scores: empty, or one per row (KvShardWriter::add_chunk).
  void add(uint64_t chunk_id, const HostKv& kv, uint64_t context = 0, const std::vector<double>& anchor_scores = {});
  void flush();  // alone: commits what is held, if anything
  // Collective, with several ranks: each rank writes what it holds as shard next + round * ranks + rank (no two
  // ranks share a name), then the leader records every rank's shards and saves the manifest. Alone: nothing.
  void end_round(size_t round);
  // The stage's end (collective): flushes, then the leader records the stage (its inputs: the chunk table's) and
  // saves the manifest; every rank returns once it is saved.
  void finish_stage(const std::string& stage, std::map<std::string, uint64_t> counts);
  uint64_t written() const { return written_; }  // by this rank
  uint64_t bytes() const { return bytes_; }            // KV as held in memory
  uint64_t file_bytes() const { return file_bytes_; }  // the shard files on disk (entropy coding included)

 private:
  std::string write_held(size_t number);  // the held chunks as shard `number`; returns its store path

  std::string dir_;
  Manifest& m_;
  const Cluster& ranks_;
  KvShardLayout layout_;
  uint64_t shard_bytes_;
  size_t next_;
  h5::Compression compression_;
  KvShardWriter writer_;
  uint64_t written_ = 0, bytes_ = 0, file_bytes_ = 0;
};

// Collective: before a run with several ranks writes shards of `mode`, the leader deletes the mode's shards that
// the manifest does not list (written by a killed run after its last commit, under numbers this run may not
// reuse), and every rank waits for it.
void remove_unlisted_shards(const Cluster& ranks, const std::string& store_dir, const std::string& mode);

}  // namespace kvf
