#include "serve/serve_metrics.h"

#include <cstdio>

namespace kvf {
namespace {

// Seconds: TTFT of a RAG answer on a CPU runs from tens of milliseconds to seconds.
const std::vector<double> kBuckets = {0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

void ServeMetrics::observe(Histogram& h, double seconds) {
  if (h.counts.empty()) h.counts.assign(kBuckets.size() + 1, 0);
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  ++h.counts[b];
  h.sum += seconds;
  ++h.count;
}

void ServeMetrics::count_request(const std::string& endpoint, int status) {
  const std::lock_guard<std::mutex> lock(m_);
  ++requests_[{endpoint, status}];
}

void ServeMetrics::observe_ttft(double seconds) {
  const std::lock_guard<std::mutex> lock(m_);
  observe(ttft_, seconds);
}

void ServeMetrics::observe_latency(double seconds) {
  const std::lock_guard<std::mutex> lock(m_);
  observe(latency_, seconds);
}

void ServeMetrics::add_generated_tokens(uint64_t tokens) {
  const std::lock_guard<std::mutex> lock(m_);
  generated_ += tokens;
}

void ServeMetrics::set_load(int queued, int active) {
  const std::lock_guard<std::mutex> lock(m_);
  queued_ = queued;
  active_ = active;
}

void ServeMetrics::set_cache(const ChunkKvCache::Stats& stats) {
  const std::lock_guard<std::mutex> lock(m_);
  cache_ = stats;
}

void ServeMetrics::set_generation(uint64_t generation) {
  const std::lock_guard<std::mutex> lock(m_);
  generation_ = generation;
}

std::string ServeMetrics::prometheus_text() const {
  const std::lock_guard<std::mutex> lock(m_);
  std::string out;
  const auto head = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  head("kvfuse_requests_total", "counter", "HTTP requests answered, by endpoint and status");
  for (const auto& [key, count] : requests_)
    out += "kvfuse_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(count) + "\n";
  const auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    head(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= kBuckets.size(); ++b) {
      cumulative += h.counts.empty() ? 0 : h.counts[b];
      out += std::string(name) + "_bucket{le=\"" + (b < kBuckets.size() ? number(kBuckets[b]) : "+Inf") + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += std::string(name) + "_sum " + number(h.sum) + "\n" + name + "_count " + std::to_string(h.count) + "\n";
  };
  histogram("kvfuse_ttft_seconds", "time to first token of chat completions (retrieval included)", ttft_);
  histogram("kvfuse_request_seconds", "chat completion latency, received to last token", latency_);
  head("kvfuse_generated_tokens_total", "counter", "tokens generated");
  out += "kvfuse_generated_tokens_total " + std::to_string(generated_) + "\n";
  head("kvfuse_queue_depth", "gauge", "requests waiting for a decoding slot");
  out += "kvfuse_queue_depth " + std::to_string(queued_) + "\n";
  head("kvfuse_active_sequences", "gauge", "answers being decoded");
  out += "kvfuse_active_sequences " + std::to_string(active_) + "\n";
  head("kvfuse_chunk_cache_hits_total", "counter", "chunk KV lookups found in memory");
  out += "kvfuse_chunk_cache_hits_total " + std::to_string(cache_.hits) + "\n";
  head("kvfuse_chunk_cache_misses_total", "counter", "chunk KV lookups read from the store");
  out += "kvfuse_chunk_cache_misses_total " + std::to_string(cache_.misses) + "\n";
  head("kvfuse_chunk_cache_bytes", "gauge", "chunk KV held in memory");
  out += "kvfuse_chunk_cache_bytes " + std::to_string(cache_.bytes_held) + "\n";
  head("kvfuse_store_generation", "gauge", "the store generation answers come from (0: the working tables)");
  out += "kvfuse_store_generation " + std::to_string(generation_) + "\n";
  return out;
}

}  // namespace kvf
