#include "store/chunk_kv_cache.h"

#include "core/error.h"
#include "core/hex.h"

namespace kvf {

struct ChunkKvCache::Flight {
  bool done = false;
  std::shared_ptr<const KvSegment> kv;
  std::exception_ptr error;
};

ChunkKvCache::ChunkKvCache(const KvModeReader& source, Backend& backend, uint64_t budget_bytes,
                           bool decode_low_bit_at_load)
    : source_(source), backend_(backend), budget_(budget_bytes), decode_low_bit_at_load_(decode_low_bit_at_load) {}

ChunkKvCache::Lookup ChunkKvCache::get(uint64_t chunk_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (const auto failed = failed_.find(chunk_id); failed != failed_.end()) {
    const std::exception_ptr error = failed->second;  // reported once; the get after this one retries
    failed_.erase(failed);
    std::rethrow_exception(error);
  }
  if (touch(chunk_id)) {
    ++stats_.hits;
    return {items_.at(chunk_id).kv, true};
  }
  if (const auto running = loading_.find(chunk_id); running != loading_.end()) {
    // Another thread is loading it: wait for that load instead of reading the chunk twice.
    const std::shared_ptr<Flight> flight = running->second;
    loaded_.wait(lock, [&] { return flight->done; });
    if (flight->error) {
      const auto kept = failed_.find(chunk_id);  // a failed prefetch: this thread reports it
      if (kept != failed_.end() && kept->second == flight->error) failed_.erase(kept);
      std::rethrow_exception(flight->error);
    }
    ++stats_.hits;
    return {flight->kv, true};
  }
  const auto flight = std::make_shared<Flight>();
  loading_.emplace(chunk_id, flight);
  return {load(chunk_id, flight, lock), false};
}

void ChunkKvCache::prefetch(uint64_t chunk_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (touch(chunk_id) || loading_.count(chunk_id)) return;
  const auto flight = std::make_shared<Flight>();
  loading_.emplace(chunk_id, flight);
  try {
    load(chunk_id, flight, lock);
  } catch (...) {
    failed_[chunk_id] = std::current_exception();
  }
}

std::shared_ptr<const KvSegment> ChunkKvCache::load(uint64_t chunk_id, const std::shared_ptr<Flight>& flight,
                                                    std::unique_lock<std::mutex>& lock) {
  ++stats_.misses;
  lock.unlock();  // other chunks stay available while this one is read
  std::shared_ptr<const KvSegment> kv;
  uint64_t bytes = 0;
  std::exception_ptr error;
  try {
    RawKvChunk& raw = thread_raw_chunk();
    {
      const std::lock_guard<std::mutex> read(read_mutex_);
      if (!source_.contains(chunk_id))
        fail("chunk KV cache: no stored KV for chunk 0x", hex64(chunk_id),
             source_.shards() ? " in mode '" + source_.layout().mode + "'" : std::string(" (the mode has no shards)"),
             "; `kvprep prefill` computes the chunks a store lacks (e.g. one kvrun eval built in part)");
      source_.read_raw(chunk_id, raw);
    }
    // Checksum, conversion and checks need no HDF5: outside the lock, concurrent loads do them in parallel.
    const KvShardLayout& layout = source_.layout();
    if (layout.low_bit() && !decode_low_bit_at_load_) {
      auto encoded = std::make_shared<const KvSegment>(source_.encoded(std::move(raw)));
      bytes = encoded->encoded->bytes.size() + encoded->positions.size() * sizeof(int32_t);
      kv = std::move(encoded);
    } else {
      bytes = (uint64_t)raw.positions.size() * (uint64_t)layout.row_elems() * 2 * sizeof(float);
      // On the backend's loading lane (a GPU's second stream: the upload overlaps the query's compute), finished
      // before any thread can read it.
      Backend& lane = backend_.loading_lane();
      kv = std::make_shared<const KvSegment>(source_.decode_segment(raw, lane));
      lane.synchronize();
    }
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  loading_.erase(chunk_id);
  flight->done = true;
  flight->kv = kv;
  flight->error = error;
  loaded_.notify_all();
  if (error) std::rethrow_exception(error);
  failed_.erase(chunk_id);  // an older failed prefetch is stale now
  keep(chunk_id, kv, bytes);
  return kv;
}

void ChunkKvCache::keep(uint64_t chunk_id, std::shared_ptr<const KvSegment> kv, uint64_t bytes) {
  if (budget_ == 0 || bytes > budget_) return;  // returned to the caller, never kept
  while (stats_.bytes_held + bytes > budget_) {
    // Holders of the evicted segment keep it alive through their shared_ptr.
    const Item& last = items_.at(order_.back());
    stats_.bytes_held -= last.bytes;
    items_.erase(order_.back());
    order_.pop_back();
    ++stats_.evictions;
  }
  order_.push_front(chunk_id);
  items_[chunk_id] = Item{std::move(kv), bytes, order_.begin()};
  stats_.bytes_held += bytes;
}

bool ChunkKvCache::touch(uint64_t chunk_id) {
  const auto it = items_.find(chunk_id);
  if (it == items_.end()) return false;
  order_.splice(order_.begin(), order_, it->second.where);
  return true;
}

ChunkKvCache::Stats ChunkKvCache::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.chunks_held = items_.size();
  return s;
}

BackgroundLoader::BackgroundLoader(ChunkKvCache& cache, int threads) : cache_(cache) {
  KVF_CHECK(threads >= 1, "background loader: ", threads, " threads, need at least 1");
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { run(); });
}

BackgroundLoader::~BackgroundLoader() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();  // each waits for its load in progress: the cache outlives this loader
}

void BackgroundLoader::enqueue(std::vector<uint64_t> chunk_ids) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.insert(queue_.end(), chunk_ids.begin(), chunk_ids.end());
  }
  wake_.notify_all();
}

void BackgroundLoader::wait_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void BackgroundLoader::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) break;
    const uint64_t chunk_id = queue_.front();
    queue_.pop_front();
    ++running_;
    lock.unlock();
    cache_.prefetch(chunk_id);  // never throws: an error waits in the cache for the query thread's get()
    lock.lock();
    --running_;
    if (queue_.empty() && running_ == 0) idle_.notify_all();
  }
  idle_.notify_all();
}

}  // namespace kvf
