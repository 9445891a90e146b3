// Stored chunk KV kept in memory in engine form, so a chunk read once is not read and converted again: the
// prefill stage reuses neighbours' KV across chunks, kvrun reuses retrieved chunks' KV across questions and loads
// the next questions' chunks in the background (FusionRAG §4.2) while the current one computes.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/kv_segment.h"
#include "store/chunk_kv.h"

namespace kvf {

// Chunk KV in engine form (KvSegment with in-chunk positions), kept in memory by chunk id up to a byte budget,
// least recently used out first. Thread-safe: kvrun's background loader fills it while the query thread reads.
//
// An entry's bytes are the f32 bytes of its stored K and V (rows * stored_layers * kv_heads * head_dim * 4 * 2;
// layers that share a stored layer share its tensors, so they are counted once). A low-bit mode's chunk (int4,
// int3, int2) is held as stored, encoded, and counted at its stored bytes, unless decode_low_bit_at_load: the
// forward pass decodes the rows it gathers (KvSegment::encoded), so the cache holds 6-10x more such chunks.
// Counting: a miss is a load from the store (whichever thread did it, prefetches included); a hit is a get()
// served without loading, either from memory or by waiting for a load another thread had already started.
//
// Threads: every read from the KvModeReader's files (HDF5) is serialised by a mutex of the cache, since HDF5 files
// are used from one thread at a time here (lib/store/hdf5_file.h); checking and converting what was read
// (KvModeReader::decode) runs after it is released, so concurrent loads do that in parallel. Loads put the KV on
// the backend's loading lane (Backend::loading_lane: the CPU backend itself, which keeps no mutable state of its
// own; a CUDA backend's second stream with pinned staging buffers, so uploads overlap the query thread's compute)
// outside any lock, and wait for it there before the chunk is handed to any thread.
class ChunkKvCache {
 public:
  // budget 0: keep nothing
  ChunkKvCache(const KvModeReader& source, Backend& backend, uint64_t budget_bytes, bool decode_low_bit_at_load = false);
  ChunkKvCache(const ChunkKvCache&) = delete;
  ChunkKvCache& operator=(const ChunkKvCache&) = delete;

  struct Lookup {
    std::shared_ptr<const KvSegment> kv;  // stays valid after eviction for as long as it is held
    bool hit = false;
  };
  // Loads on a miss; throws kvf::Error if the mode lacks the chunk (or the error a failed prefetch of it kept).
  Lookup get(uint64_t chunk_id);
  // Loads the chunk if it is neither held nor loading, else only marks it recently used. Never throws: an error
  // is kept and rethrown (once) by the next get() of that id, so a bad prefetch is reported by the thread that
  // needs the chunk.
  void prefetch(uint64_t chunk_id);

  struct Stats {
    uint64_t hits = 0, misses = 0, bytes_held = 0, chunks_held = 0, evictions = 0;
  };
  Stats stats() const;

 private:
  struct Flight;  // one load in progress, awaited by other threads asking for the same chunk
  struct Item {
    std::shared_ptr<const KvSegment> kv;
    uint64_t bytes = 0;
    std::list<uint64_t>::iterator where;  // in order_
  };
  // Loads chunk_id, whose Flight the caller registered; lock is held on entry and on return (also when it throws).
  std::shared_ptr<const KvSegment> load(uint64_t chunk_id, const std::shared_ptr<Flight>& flight,
                                        std::unique_lock<std::mutex>& lock);
  void keep(uint64_t chunk_id, std::shared_ptr<const KvSegment> kv, uint64_t bytes);  // under mutex_
  bool touch(uint64_t chunk_id);                                                      // under mutex_

  const KvModeReader& source_;
  Backend& backend_;
  const uint64_t budget_;
  const bool decode_low_bit_at_load_;
  std::mutex read_mutex_;  // every read from source_'s files

  mutable std::mutex mutex_;  // everything below
  std::condition_variable loaded_;
  std::unordered_map<uint64_t, std::shared_ptr<Flight>> loading_;
  std::unordered_map<uint64_t, std::exception_ptr> failed_;  // prefetch errors not yet reported
  std::list<uint64_t> order_;                                // most recently used first
  std::unordered_map<uint64_t, Item> items_;
  Stats stats_;
};

// Background threads that load chunk ids into a cache (FusionRAG §4.2: the next questions' chunks load while
// the current one computes). enqueue() returns at once; errors are kept by the cache and rethrown by the next
// get() of that id, so a failed prefetch never kills the process: the query thread's own get() reports it.
// `threads` loads run side by side (the store's reads one at a time, each chunk's checks, conversion and upload
// in parallel), as the query thread's own loads do: one thread alone converts a chunk at a time, slower than a
// GPU question computes. On a CPU backend they would take the compute's cores, so there one is right.
class BackgroundLoader {
 public:
  explicit BackgroundLoader(ChunkKvCache& cache, int threads = 1);
  ~BackgroundLoader();  // stops and joins; pending work is dropped
  BackgroundLoader(const BackgroundLoader&) = delete;
  BackgroundLoader& operator=(const BackgroundLoader&) = delete;

  void enqueue(std::vector<uint64_t> chunk_ids);
  void wait_idle();  // until the queue is empty and no load runs: for tests and benchmarks

 private:
  void run();

  ChunkKvCache& cache_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<uint64_t> queue_;
  int running_ = 0;  // loads in progress
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: they start once the members they use exist
};

}  // namespace kvf
