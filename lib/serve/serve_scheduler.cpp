#include "serve/serve_scheduler.h"

#include <algorithm>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/stopwatch.h"

namespace kvf {
namespace {

// The part of `text` that stays whatever tokens come next: without its last (longest stop string - 1) bytes, which
// a stop string may yet claim, cut back to a whole UTF-8 character.
size_t settled_length(const std::string& text, const std::vector<std::string>& stop) {
  size_t longest = 0;
  for (const std::string& s : stop) longest = std::max(longest, s.size());
  size_t n = longest > 1 ? text.size() - std::min(text.size(), longest - 1) : text.size();
  while (n > 0 && n < text.size() && ((unsigned char)text[n] & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

void complete_request(ServeRequest& r, std::optional<QueryAnswer> answer, std::optional<ApiError> error) {
  {
    const std::lock_guard<std::mutex> lock(r.m);
    if (r.finished) return;
    if (answer) r.text = answer->answer;
    r.answer = std::move(answer);
    r.error = std::move(error);
    r.finished = true;
  }
  r.changed.notify_all();
}

ServeScheduler::ServeScheduler(std::unique_ptr<QueryEngine> engine, SchedulerOptions options, ServeMetrics& metrics)
    : owned_(std::move(engine)), generation_(owned_->generation()), options_(options), metrics_(metrics) {
  metrics_.set_generation(generation_);
}

void ServeScheduler::offer_engine(std::unique_ptr<QueryEngine> engine) {
  {
    const std::lock_guard<std::mutex> lock(m_);
    offered_ = std::move(engine);
  }
  work_.notify_one();
}

bool ServeScheduler::submit(const std::shared_ptr<ServeRequest>& request) {
  {
    const std::lock_guard<std::mutex> lock(m_);
    if (stopping_ || (int)queue_.size() >= options_.max_queue) return false;
    queue_.push_back(request);
  }
  work_.notify_one();
  return true;
}

void ServeScheduler::stop() {
  stopping_ = true;
  work_.notify_one();
}

void ServeScheduler::fail_remaining(const ApiError& error) {
  {
    const std::lock_guard<std::mutex> lock(m_);
    fail_with_ = error;
    failing_ = true;
  }
  work_.notify_one();
}

void ServeScheduler::admit(const std::shared_ptr<ServeRequest>& r) {
  if (r->abandoned) return;
  if (r->kind == ServeRequest::Kind::Retrieve) {
    try {
      Query q;
      q.id = "retrieve";
      q.question = r->retrieve.query;
      const ResolvedQuery found = engine().resolve(q, r->retrieve.top_k);
      for (size_t i = 0; i < found.chunk_ids.size(); ++i)
        r->hits.push_back({found.chunk_ids[i], found.scores[i], engine().chunk_source(found.chunk_ids[i])});
      complete_request(*r, std::nullopt, std::nullopt);
    } catch (const std::exception& e) {
      complete_request(*r, std::nullopt, ApiError(500, e.what()));
    }
    return;
  }
  const ChatRequest& chat = r->chat;
  try {
    const ResolvedQuery resolved = resolve_chat(*r);
    active_.push_back({r, engine().begin(resolved, chat.options)});
    metrics_.observe_ttft(seconds_since(r->received));
    {
      const std::lock_guard<std::mutex> lock(r->m);
      r->admitted = true;
    }
    r->changed.notify_all();
  } catch (const ApiError& e) {
    complete_request(*r, std::nullopt, e);
  } catch (const std::exception& e) {
    complete_request(*r, std::nullopt, ApiError(500, e.what()));
  }
}

ResolvedQuery ServeScheduler::resolve_chat(ServeRequest& r) {
  if (r.resolved && r.resolved_generation == generation_) return *r.resolved;
  const ChatRequest& chat = r.chat;
  for (size_t i = 0; i < chat.query.chunk_ids.size(); ++i) {  // what the request names must be in the store
    const uint64_t id = chat.query.chunk_ids[i];
    try {
      engine().chunk_source(id);
    } catch (const Error&) {
      const std::string param = "kvfuse.chunk_ids[" + std::to_string(i) + "]";
      throw ApiError(400, param + ": chunk " + hex64(id) + " is not in the store", param, "unknown_chunk");
    }
  }
  try {
    r.resolved = engine().resolve(chat.query, chat.options.top_k);
    r.resolved_generation = generation_;
    return *r.resolved;
  } catch (const Error& e) {
    if (chat.query.contexts.empty()) throw;
    throw ApiError(400, std::string("kvfuse.documents: ") + e.what(), "kvfuse.documents", "unknown_passage");
  }
}

void ServeScheduler::prefetch_waiting(const std::vector<std::shared_ptr<ServeRequest>>& waiting) {
  for (const std::shared_ptr<ServeRequest>& r : waiting) {
    if (r->kind != ServeRequest::Kind::Chat || r->abandoned || r->unsettled) continue;
    if (r->resolved && r->resolved_generation == generation_) continue;
    try {
      engine().prefetch(resolve_chat(*r).chunk_ids);
    } catch (const std::exception&) {
      r->unsettled = true;
    }
    return;
  }
}

void ServeScheduler::publish(Active& a, bool done) {
  ServeRequest& r = *a.request;
  if (done) {
    QueryAnswer answer = engine().finish(*a.answer);
    metrics_.add_generated_tokens(answer.tokens.size());
    metrics_.observe_latency(seconds_since(r.received));
    complete_request(r, std::move(answer), std::nullopt);
    return;
  }
  const std::string text = engine().answer_text(a.answer->tokens(), r.chat.options.stop);
  const size_t settled = settled_length(text, r.chat.options.stop);
  {
    const std::lock_guard<std::mutex> lock(r.m);
    if (settled <= r.text.size() || text.compare(0, r.text.size(), r.text) != 0) return;
    r.text = text.substr(0, settled);
  }
  r.changed.notify_all();
}

void ServeScheduler::update_load() {
  size_t queued;
  {
    const std::lock_guard<std::mutex> lock(m_);
    queued = queue_.size();
  }
  metrics_.set_load((int)queued, (int)active_.size());
  metrics_.set_cache(engine().cache_stats());
}

void ServeScheduler::run() {
  for (;;) {
    std::shared_ptr<ServeRequest> arrived;
    std::vector<std::shared_ptr<ServeRequest>> waiting;  // the next to be admitted: their KV loads meanwhile
    bool switching = false;  // a newer generation waits to take over: nothing is settled on the old one
    {
      std::unique_lock<std::mutex> lock(m_);
      work_.wait(lock,
                 [&] { return !queue_.empty() || !active_.empty() || stopping_ || failing_ || offered_; });
      if (failing_) {
        for (const std::shared_ptr<ServeRequest>& r : queue_) complete_request(*r, std::nullopt, *fail_with_);
        queue_.clear();
        for (Active& a : active_) complete_request(*a.request, std::nullopt, *fail_with_);
        active_.clear();
        break;
      }
      if (stopping_ && queue_.empty() && active_.empty()) break;
      if (offered_ && active_.empty()) {  // the new generation takes over once the old one's answers are done
        owned_ = std::move(offered_);
        generation_ = owned_->generation();
        metrics_.set_generation(generation_);
        note("kvrun serve: answering from store generation %llu\n", (unsigned long long)generation_);
      }
      // One admission per turn: an answer's first tokens go out before the next prefill starts, and the answers
      // already decoding take a step between prefills rather than waiting for a whole burst of them.
      if (!offered_ && !queue_.empty() && (int)active_.size() < options_.max_batch) {
        arrived = queue_.front();
        queue_.pop_front();
      }
      waiting.assign(queue_.begin(), queue_.begin() + (ptrdiff_t)std::min(queue_.size(), (size_t)options_.max_batch));
      switching = offered_ != nullptr;
    }
    if (arrived) admit(arrived);
    if (!switching) prefetch_waiting(waiting);
    std::vector<AnswerInProgress*> running;
    for (Active& a : active_)
      if (!a.answer->done()) running.push_back(a.answer.get());
    if (!running.empty()) {
      try {
        engine().step(running);
      } catch (const std::exception& e) {  // the model failed (non-finite logits, say): every answer of the step
        for (Active& a : active_) complete_request(*a.request, std::nullopt, ApiError(500, e.what()));
        active_.clear();
      }
    }
    for (Active& a : active_) publish(a, a.answer->done());
    active_.erase(std::remove_if(active_.begin(), active_.end(),
                                 [](const Active& a) { return a.answer->done() || a.request->abandoned; }),
                  active_.end());
    update_load();
  }
  update_load();
}

}  // namespace kvf
