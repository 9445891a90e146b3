// The options every kvprep and kvrun subcommand takes, and what they do while it runs:
//   --threads N   worker threads (0, the default: every core)
//   --json        the command's result as one JSON object on stdout (text for people otherwise)
//   --quiet       no progress and no notes on stderr (errors still print; core/log.h)
// Results go to stdout, progress and notes to stderr, so `cmd --json --quiet | jq` sees only the result.
#pragma once
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli.h"
#include "core/log.h"
#include "fusion/answer_json.h"  // decode_tokens_per_s

namespace kvf::cli {

struct CommonOptions {
  int threads = 0;
  bool json = false;
  bool quiet = false;
};

// `json_help` says what the object holds ("one JSON object: ...").
inline void add_common_options(CLI::App& cmd, CommonOptions& o, const std::string& json_help) {
  cmd.add_option("--threads", o.threads, "worker threads (default: all cores)")->check(CLI::Range(0, 1 << 16));
  cmd.add_flag("--json", o.json, json_help);
  cmd.add_flag("--quiet", o.quiet, "no progress or notes on stderr (errors still print)");
}

// Held while a command runs: at most `threads` worker threads, and the log level --quiet asks for.
class CommandSettings {
 public:
  explicit CommandSettings(const CommonOptions& o)
      : threads_(thread_count(o.threads)), limit_(tbb::global_control::max_allowed_parallelism, threads_) {
    set_log_level(o.quiet ? LogLevel::Errors : LogLevel::Notes);
  }
  int threads() const { return threads_; }

 private:
  int threads_;
  tbb::global_control limit_;
};

// One JSON object on one line of stdout (text that is not UTF-8 is replaced, never an exception).
inline void print_json(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

}  // namespace kvf::cli
