#include <memory>
#include <string>

#include "common/cli.h"
#include "common/common_options.h"
#include "core/error.h"
#include "core/regular_file.h"
#include "prep/store_model.h"
#include "query_commands.h"
#include "query_options.h"
#include "serve/http_service.h"

namespace kvf::cli {
namespace {

// The key a --api-key-file holds: its text without surrounding whitespace; an empty file is refused.
std::string read_api_key(const std::string& path) {
  const std::string text = read_regular_file(path, 4096);
  const size_t b = text.find_first_not_of(" \t\r\n"), e = text.find_last_not_of(" \t\r\n");
  KVF_CHECK(b != std::string::npos, "--api-key-file ", path, ": the file holds no key");
  return text.substr(b, e - b + 1);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  struct Args {
    QueryEngineOptions engine;
    ServeOptions serve;
    std::string method = "fusion", compute = "fast", api_key_file;
    double cache_mb = 1024;
    bool exact_first_chunk = false;
    FirstChunkKv first_chunk_kv = FirstChunkKv::Auto;
    CommonOptions common;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("serve", "Answer OpenAI-style chat completions over a store (HTTP)");
  cmd->footer(
      "Examples:\n"
      "  kvrun serve --store stores/demo-qwen0.5b                 # http://127.0.0.1:8080\n"
      "  curl -s localhost:8080/v1/chat/completions -H 'Content-Type: application/json' \\\n"
      "    -d '{\"messages\": [{\"role\": \"user\", \"content\": \"What is FOLDOC?\"}], \"kvfuse\": {\"top_k\": 4}}'\n"
      "  kvrun serve --store S --host 0.0.0.0 --port 9000 --api-key-file key.txt --max-batch 16\n"
      "Loads the store, model, embedder and index once, then answers until SIGTERM or Ctrl-C: no new requests,\n"
      "those in flight finish (at most --drain-seconds), exit 0. Endpoints: POST /v1/chat/completions (stream\n"
      "too), POST /v1/retrieve, GET /v1/models, /health, /metrics. A request's `kvfuse` object picks method,\n"
      "recompute, top_k, chunk_ids or documents; the options below are the defaults. docs/serve.md has it all.");
  cmd->add_option("--store", a->engine.store_dir, "the store built by kvprep")->required();
  cmd->add_option("--model", a->engine.model, kStoreModelHelp);
  cmd->add_option("--embedder", a->engine.embedder, "the store's embedder, for retrieval")->capture_default_str();
  cmd->add_option("--kv", a->engine.kv_mode, "stored KV the answers read (one mode per server)")->capture_default_str();
  cmd->add_option("--method", a->method, "default method: full | reuse | cacheblend | a3 | fusion")
      ->capture_default_str()
      ->check(accepted_by(parse_method));
  cmd->add_option("--recompute", a->serve.defaults.recompute, "default share of context tokens recomputed, 0..1")
      ->capture_default_str()
      ->check(finite_in(0, 1));
  cmd->add_option("--top-k", a->serve.defaults.top_k, "default chunks retrieved")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--max-tokens", a->serve.defaults.max_tokens, "default most tokens per answer")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  add_exact_first_chunk_option(*cmd, a->exact_first_chunk, a->first_chunk_kv);
  cmd->add_option("--host", a->serve.host, "address to listen on (the loopback unless told otherwise)")
      ->capture_default_str();
  cmd->add_option("--port", a->serve.port, "port (0: any free one, printed once ready)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--max-batch", a->serve.scheduler.max_batch, "answers decoded together")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--max-queue", a->serve.scheduler.max_queue, "requests waiting beyond those; more get 429")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--api-key-file", a->api_key_file, "a file holding the key every /v1 request must send as "
                  "'Authorization: Bearer KEY'");
  cmd->add_option("--max-body-bytes", a->serve.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 30));
  cmd->add_option("--request-timeout", a->serve.request_timeout_s, "seconds a request may take; then 504")
      ->capture_default_str()
      ->check(finite_in(0.1, 86400));
  cmd->add_option("--drain-seconds", a->serve.drain_s, "after SIGTERM, how long requests in flight may take")
      ->capture_default_str()
      ->check(finite_in(0, 86400));
  cmd->add_option("--reload-seconds", a->serve.reload_s,
                  "how often to look for a newly published store generation, which then answers (0: never)")
      ->capture_default_str()
      ->check(finite_in(0, 86400));
  cmd->add_option("--cache-mb", a->cache_mb, "chunk KV kept in memory, MiB")->capture_default_str()->check(finite_in(0, 1 << 30));
  cmd->add_option("--backend", a->engine.backend, "where the model runs: cpu | cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--compute", a->compute, "fast | f32")->capture_default_str()->check(accepted_by(compute_mode_from_name));
  add_common_options(*cmd, a->common, "(no JSON output: the service answers in JSON)");
  cmd->callback([a, cmd] {
    const CommandSettings settings(a->common);
    apply_exact_first_chunk_default(*cmd, {a->engine.kv_mode}, a->exact_first_chunk);
    QueryEngineOptions engine = a->engine;
    engine.cache_bytes = (uint64_t)(a->cache_mb * 1024 * 1024);
    engine.compute = compute_mode_from_name(a->compute);
    ServeOptions o = a->serve;
    o.defaults.method = parse_method(a->method);
    o.defaults.kv_mode = engine.kv_mode;
    o.defaults.exact_first_chunk = a->exact_first_chunk;
    o.defaults.first_chunk_kv = a->first_chunk_kv;
    if (!a->api_key_file.empty()) o.api_key = read_api_key(a->api_key_file);
    const int status = serve(engine, o);
    if (status != 0) std::exit(status);
  });
}

}  // namespace kvf::cli
