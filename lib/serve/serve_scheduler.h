// kvrun serve's engine thread (docs/serve.md, "Scheduling"): requests queue; each turn admits the next queued
// request into a free decoding slot (retrieval and the fused prefill), then runs one decoding step
// for every active answer together (one forward call per model), publishes each answer's new text, and completes
// the answers that are done. The QueryEngine is used from this thread only.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fusion/query_engine.h"
#include "serve/api_error.h"
#include "serve/chat_request.h"
#include "serve/serve_metrics.h"

namespace kvf {

struct RetrievedHit {
  uint64_t chunk_id = 0;
  float score = 0;
  ChunkSource source;
};

// One request between an HTTP thread and the engine thread.
struct ServeRequest {
  enum class Kind { Chat, Retrieve } kind = Kind::Chat;
  ChatRequest chat;
  RetrieveRequest retrieve;
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();

  std::mutex m;
  std::condition_variable changed;
  std::string text;  // the answer's text so far: a prefix of the final answer, grown by the engine thread
  bool admitted = false;  // prefilled: decoding has begun (or a retrieval is done)
  bool finished = false;
  std::optional<QueryAnswer> answer;  // Chat, once finished without error
  std::vector<RetrievedHit> hits;     // Retrieve
  std::optional<ApiError> error;
  std::atomic<bool> abandoned{false};  // the client went away or timed out: the engine drops the request

  // Engine thread only: the chunks settled while the request waited (retrieved or mapped from its documents), so
  // that their KV loads in the background before its turn; kept for the store generation that settled them.
  std::optional<ResolvedQuery> resolved;
  uint64_t resolved_generation = 0;
  bool unsettled = false;  // settling it failed: left to its admission, which reports why
};

struct SchedulerOptions {
  int max_batch = 8;   // answers decoded together
  int max_queue = 64;  // requests waiting beyond those
};

class ServeScheduler {
 public:
  ServeScheduler(std::unique_ptr<QueryEngine> engine, SchedulerOptions options, ServeMetrics& metrics);
  // A newer store generation's engine (docs/serve.md, "Store updates"): the engine thread stops admitting, lets the
  // answers in progress finish on the old engine, then answers from this one. Any thread.
  void offer_engine(std::unique_ptr<QueryEngine> engine);
  uint64_t generation() const { return generation_; }  // of the engine answering now
  // Queues a request; false when the queue is full or the scheduler is stopping.
  bool submit(const std::shared_ptr<ServeRequest>& request);
  // The engine thread: serves until stop(), then until every queued and active request is done.
  void run();
  void stop();  // accepts nothing more; run() drains and returns
  // Completes whatever is left with this error (a drain that ran out of time); run() then returns.
  void fail_remaining(const ApiError& error);
  bool stopping() const { return stopping_; }

 private:
  struct Active {
    std::shared_ptr<ServeRequest> request;
    std::unique_ptr<AnswerInProgress> answer;
  };
  void admit(const std::shared_ptr<ServeRequest>& request);
  // The chunks a chat request answers from: those settled while it waited, or settled now. Throws ApiError (400)
  // for a chunk id or passage the store lacks.
  ResolvedQuery resolve_chat(ServeRequest& request);
  // Settles the first waiting request whose chunks are not yet settled and starts loading its chunk KV; one per
  // turn, so that a retrieval's embedding never holds up a decoding step by more than one question.
  void prefetch_waiting(const std::vector<std::shared_ptr<ServeRequest>>& waiting);
  void publish(Active& a, bool done);
  void update_load();

  std::unique_ptr<QueryEngine> owned_;
  QueryEngine& engine() { return *owned_; }
  std::unique_ptr<QueryEngine> offered_;  // under m_
  std::atomic<uint64_t> generation_{0};
  SchedulerOptions options_;
  ServeMetrics& metrics_;
  std::mutex m_;
  std::condition_variable work_;
  std::deque<std::shared_ptr<ServeRequest>> queue_;
  std::vector<Active> active_;  // engine thread only
  std::atomic<bool> stopping_{false}, failing_{false};
  std::optional<ApiError> fail_with_;
};

// Completes a request: its answer or error, under its lock, waking its HTTP thread.
void complete_request(ServeRequest& request, std::optional<QueryAnswer> answer, std::optional<ApiError> error);

}  // namespace kvf
