// kvrun serve's counters for GET /metrics, in Prometheus' text exposition format: requests by status, TTFT and
// latency histograms, tokens generated, queue depth, active sequences and the chunk KV cache. Thread-safe: HTTP
// threads count requests, the engine thread the rest.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "store/chunk_kv_cache.h"

namespace kvf {

class ServeMetrics {
 public:
  void count_request(const std::string& endpoint, int status);
  void observe_ttft(double seconds);
  void observe_latency(double seconds);
  void add_generated_tokens(uint64_t tokens);
  void set_load(int queued, int active);
  void set_cache(const ChunkKvCache::Stats& stats);
  void set_generation(uint64_t generation);
  std::string prometheus_text() const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket of kBuckets, and one more for +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  static void observe(Histogram& h, double seconds);
  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (endpoint, status) -> count
  Histogram ttft_, latency_;
  uint64_t generated_ = 0;
  int queued_ = 0, active_ = 0;
  ChunkKvCache::Stats cache_;
  uint64_t generation_ = 0;
};

}  // namespace kvf
