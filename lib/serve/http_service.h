// kvrun serve (docs/serve.md): an OpenAI-compatible HTTP service over one store. It listens first (answering 503
// while the engine loads), then serves until SIGTERM or SIGINT: it stops accepting, lets requests in flight finish
// within the drain time, and returns 0.
#pragma once
#include <string>

#include "fusion/query_engine.h"
#include "serve/chat_request.h"
#include "serve/serve_scheduler.h"

namespace kvf {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port (printed once ready)
  std::string api_key;              // "": no authentication; else every /v1 request needs "Bearer <key>"
  size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  double request_timeout_s = 300;   // a request not answered by then gets 504 and leaves the engine
  double drain_s = 30;              // after SIGTERM: how long requests in flight may take to finish
  double reload_s = 5;              // how often the store's manifest is checked for a new generation (0: never)
  ServeDefaults defaults;
  SchedulerOptions scheduler;
};

// Runs the service until a signal stops it; returns the exit status. Throws kvf::Error when it cannot listen or
// the engine cannot load (naming the address or the store).
int serve(const QueryEngineOptions& engine_options, const ServeOptions& options);

}  // namespace kvf
