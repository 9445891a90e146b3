#include "serve/http_service.h"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "fusion/answer_json.h"
#include "store/manifest.h"

namespace kvf {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status, api_error_json(e.status, e.what(), e.param, e.code));
}

std::string sse(const json& event) {
  return "data: " + event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

const char* finish_reason(const QueryAnswer& a) { return a.stopped_by == "max_tokens" ? "length" : "stop"; }

json usage_json(const QueryAnswer& a) {
  return {{"prompt_tokens", a.n_prompt_tokens},
          {"completion_tokens", a.tokens.size()},
          {"total_tokens", a.n_prompt_tokens + (int64_t)a.tokens.size()}};
}

// What identifies one completion across its response or its stream's chunks.
struct Completion {
  std::string id, model;
  int64_t created = 0;
  json chunk(const json& delta, const json& finish) const {
    return {{"id", id},
            {"object", "chat.completion.chunk"},
            {"created", created},
            {"model", model},
            {"choices", json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}}})}};
  }
};

json completion_json(const Completion& c, const QueryAnswer& a) {
  return {{"id", c.id},
          {"object", "chat.completion"},
          {"created", c.created},
          {"model", c.model},
          {"choices", json::array({{{"index", 0},
                                    {"message", {{"role", "assistant"}, {"content", a.answer}}},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason(a)}}})},
          {"usage", usage_json(a)},
          {"kvfuse", answer_json(a)}};
}

// The endpoints metrics name; anything else counts as "other" (no label per probed path).
std::string endpoint_label(const std::string& path) {
  static const std::set<std::string> known = {"/v1/chat/completions", "/v1/retrieve", "/v1/models", "/health",
                                              "/metrics"};
  return known.count(path) ? path : "other";
}

class Service {
 public:
  Service(const ServeOptions& o) : o_(o) {}

  // Routes, limits and authentication; the engine and scheduler come later (set_engine), 503 until then.
  void configure(httplib::Server& svr) {
    const size_t threads = (size_t)std::min(256, o_.scheduler.max_batch + o_.scheduler.max_queue + 8);
    svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    svr.set_payload_max_length(o_.max_body_bytes);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path.rfind("/v1/", 0) != 0 || o_.api_key.empty()) return httplib::Server::HandlerResponse::Unhandled;
      if (req.get_header_value("Authorization") == "Bearer " + o_.api_key)
        return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, ApiError(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>'", "",
                               "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
    svr.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 413)
        send_error(res, ApiError(413, "the request body is larger than " + std::to_string(o_.max_body_bytes) +
                                          " bytes (kvrun serve --max-body-bytes)", "", "body_too_large"));
      else if (res.status == 404)
        send_error(res, ApiError(404, "no endpoint " + req.method + " " + req.path.substr(0, 200), "", "not_found"));
      else
        send_error(res, ApiError(res.status, "HTTP " + std::to_string(res.status)));
    });
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      metrics_.count_request(endpoint_label(req.path), res.status);
    });
    svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, ready_ ? 200 : 503, {{"status", ready_ ? "ok" : "loading"}});
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.prometheus_text(), "text/plain; version=0.0.4");
    });
    svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      if (!ready(res)) return;
      send_json(res, 200, {{"object", "list"},
                           {"data", json::array({{{"id", model_}, {"object", "model"}, {"created", 0},
                                                  {"owned_by", "kvfuse"}}})}});
    });
    svr.Post("/v1/retrieve", [this](const httplib::Request& req, httplib::Response& res) { retrieve(req, res); });
    svr.Post("/v1/chat/completions",
             [this](const httplib::Request& req, httplib::Response& res) { chat(req, res); });
  }

  void set_engine(ServeScheduler& scheduler, const std::string& model) {
    scheduler_ = &scheduler;
    model_ = model;
    ready_ = true;
  }
  ServeMetrics& metrics() { return metrics_; }

 private:
  bool ready(httplib::Response& res) {
    if (!ready_) send_error(res, ApiError(503, "the server is still loading the store and the model", "", "loading"));
    return ready_;
  }

  // Queues the request; false (and the response sent) when the queue is full or the server is stopping.
  bool submit(const std::shared_ptr<ServeRequest>& r, httplib::Response& res) {
    if (scheduler_->submit(r)) return true;
    if (scheduler_->stopping()) {
      send_error(res, ApiError(503, "the server is stopping", "", "stopping"));
    } else {
      res.set_header("Retry-After", "1");
      send_error(res, ApiError(429, "the queue is full (" + std::to_string(o_.scheduler.max_queue) +
                                        " requests wait already; kvrun serve --max-queue)", "", "queue_full"));
    }
    return false;
  }

  // Waits until `done` holds for the request, at most until its deadline; false (and the request abandoned) when
  // the deadline passed.
  template <class Done>
  bool wait_for(ServeRequest& r, std::unique_lock<std::mutex>& lock, Done done) {
    const auto deadline = r.received + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(o_.request_timeout_s));
    if (r.changed.wait_until(lock, deadline, done)) return true;
    r.abandoned = true;
    return false;
  }
  ApiError timeout_error() const {
    return ApiError(504, "the request took longer than " + std::to_string((int)o_.request_timeout_s) +
                             " s (kvrun serve --request-timeout)", "", "timeout");
  }

  void retrieve(const httplib::Request& req, httplib::Response& res) {
    if (!ready(res)) return;
    auto r = std::make_shared<ServeRequest>();
    r->kind = ServeRequest::Kind::Retrieve;
    try {
      r->retrieve = parse_retrieve_request(req.body, o_.defaults);
    } catch (const ApiError& e) {
      return send_error(res, e);
    }
    if (!submit(r, res)) return;
    std::unique_lock<std::mutex> lock(r->m);
    if (!wait_for(*r, lock, [&] { return r->finished; })) return send_error(res, timeout_error());
    if (r->error) return send_error(res, *r->error);
    json data = json::array();
    for (const RetrievedHit& h : r->hits)
      data.push_back({{"chunk_id", hex64(h.chunk_id)}, {"score", h.score}, {"doc_id", h.source.doc_id},
                      {"title", h.source.title}, {"text", h.source.text}});
    send_json(res, 200, {{"object", "list"}, {"data", data}});
  }

  void chat(const httplib::Request& req, httplib::Response& res) {
    if (!ready(res)) return;
    auto r = std::make_shared<ServeRequest>();
    try {
      r->chat = parse_chat_request(req.body, o_.defaults);
    } catch (const ApiError& e) {
      return send_error(res, e);
    }
    r->chat.query.id = "chatcmpl-" + std::to_string(++served_);
    if (!submit(r, res)) return;
    const Completion c{r->chat.query.id, model_, (int64_t)std::time(nullptr)};
    std::unique_lock<std::mutex> lock(r->m);
    // A stream starts once the prefill is done, so that what fails before it (an unknown chunk) gets its status.
    if (!wait_for(*r, lock, [&] { return r->finished || (r->chat.stream && r->admitted); }))
      return send_error(res, timeout_error());
    if (r->finished && r->error) return send_error(res, *r->error);
    if (!r->chat.stream) return send_json(res, 200, completion_json(c, *r->answer));
    lock.unlock();
    res.set_header("Cache-Control", "no-cache");
    // The whole stream is written in one call of the provider: cpp-httplib calls a provider again only while the
    // server runs, and a stream in flight must finish after SIGTERM stops the server.
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, r, c](size_t, httplib::DataSink& sink) {
          size_t sent = 0;
          std::string out = sse(c.chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
          for (;;) {
            std::unique_lock<std::mutex> stream_lock(r->m);
            const bool in_time = wait_for(*r, stream_lock, [&] { return r->finished || r->text.size() > sent; });
            if (r->text.size() > sent) {
              out += sse(c.chunk({{"content", r->text.substr(sent)}}, nullptr));
              sent = r->text.size();
            }
            const bool finished = r->finished || !in_time;
            if (finished) {
              if (!in_time) {
                const ApiError e = timeout_error();
                out += sse(api_error_json(e.status, e.what(), e.param, e.code));
              } else if (r->error) {
                out += sse(api_error_json(r->error->status, r->error->what(), r->error->param, r->error->code));
              } else {
                out += sse(c.chunk(json::object(), finish_reason(*r->answer)));
                if (r->chat.include_usage) {
                  json last = c.chunk(json::object(), nullptr);
                  last["choices"] = json::array();
                  last["usage"] = usage_json(*r->answer);
                  last["kvfuse"] = answer_json(*r->answer);
                  out += sse(last);
                }
              }
              out += "data: [DONE]\n\n";
            }
            stream_lock.unlock();
            if (!sink.write(out.data(), out.size())) {
              r->abandoned = true;  // the client went away: its slot is freed
              return false;
            }
            out.clear();
            if (finished) {
              sink.done();
              return true;
            }
          }
        },
        [r](bool success) {
          if (!success) r->abandoned = true;
        });
  }

  const ServeOptions& o_;
  ServeMetrics metrics_;
  std::atomic<bool> ready_{false};
  ServeScheduler* scheduler_ = nullptr;
  std::string model_;
  std::atomic<uint64_t> served_{0};
};

}  // namespace

int serve(const QueryEngineOptions& engine_options, const ServeOptions& o) {
  // SIGTERM and SIGINT go to this thread's sigwait: blocked before any thread starts, so every thread inherits it.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Service service(o);
  httplib::Server svr;
  service.configure(svr);
  const int port = o.port == 0 ? svr.bind_to_any_port(o.host) : (svr.bind_to_port(o.host, o.port) ? o.port : -1);
  KVF_CHECK(port > 0, "kvrun serve: cannot listen on ", o.host, ":", o.port,
            " (the port is in use, or the host is not an address of this machine)");
  std::thread http([&svr] { svr.listen_after_bind(); });
  std::unique_ptr<QueryEngine> engine;
  try {
    engine = std::make_unique<QueryEngine>(engine_options);
  } catch (...) {
    svr.stop();
    http.join();
    throw;
  }
  const std::string model = engine->model_name(), kv_mode = engine->kv_mode();
  ServeScheduler scheduler(std::move(engine), o.scheduler, service.metrics());
  std::mutex drained_m;
  std::condition_variable drained_cv;
  bool drained = false;
  std::thread worker([&] {
    scheduler.run();
    const std::lock_guard<std::mutex> lock(drained_m);
    drained = true;
    drained_cv.notify_all();
  });
  // A store updated by kvprep while the service runs: each newly published generation gets an engine of its own,
  // loaded here beside the one answering, which the scheduler then swaps in.
  std::mutex watch_m;
  std::condition_variable watch_cv;
  bool watch_stop = false;
  std::thread watcher([&] {
    if (o.reload_s <= 0) return;
    uint64_t seen = scheduler.generation();
    std::unique_lock<std::mutex> lock(watch_m);
    while (!watch_cv.wait_for(lock, std::chrono::duration<double>(o.reload_s), [&] { return watch_stop; })) {
      lock.unlock();
      try {
        const uint64_t published = load_manifest(engine_options.store_dir).published.number;
        if (published != seen) {
          note("kvrun serve: store generation %llu is published; loading it beside the one answering\n",
               (unsigned long long)published);
          auto next = std::make_unique<QueryEngine>(engine_options);
          seen = next->generation();
          scheduler.offer_engine(std::move(next));
        }
      } catch (const std::exception& e) {  // a writer mid-commit, say: the next check tries again
        note("kvrun serve: the store's new generation does not load yet: %s\n", e.what());
      }
      lock.lock();
    }
  });
  service.set_engine(scheduler, model);
  std::printf("kvrun serve: listening on http://%s:%d (store %s, model %s, %s KV, %s at %.2f; Ctrl-C or SIGTERM "
              "stops it)\n",
              o.host.c_str(), port, engine_options.store_dir.c_str(), model.c_str(), kv_mode.c_str(),
              method_name(o.defaults.method).c_str(), o.defaults.recompute);
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  note("kvrun serve: %s: no new requests; finishing those in flight (at most %g s)\n",
       sig == SIGTERM ? "SIGTERM" : "SIGINT", o.drain_s);
  scheduler.stop();
  svr.stop();  // no new connections; the server's threads end with the requests they hold
  {
    std::unique_lock<std::mutex> lock(drained_m);
    const auto limit = std::chrono::duration<double>(o.drain_s);
    if (!drained_cv.wait_for(lock, limit, [&] { return drained; }))
      scheduler.fail_remaining(ApiError(503, "the server stopped before this request was answered", "", "stopping"));
  }
  {
    const std::lock_guard<std::mutex> lock(watch_m);
    watch_stop = true;
  }
  watch_cv.notify_all();
  watcher.join();
  worker.join();
  http.join();
  note("kvrun serve: stopped\n");
  return 0;
}

}  // namespace kvf
