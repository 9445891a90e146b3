// Progress of a long stage (chunking, embedding, prefill): on a terminal a one-line bar redrawn in place with
// count/total, rate and ETA; otherwise (logs, CI) a plain line every few seconds and a summary at the end.
// advance() is cheap enough to call once per item, and safe to call from several threads.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace kvf {

enum class ProgressMode { Auto, Terminal, Plain };  // Auto: Terminal when the output is a TTY

struct ProgressOptions {
  std::FILE* out = stderr;         // nullptr: report nothing
  double log_interval_s = 10.0;    // plain mode: seconds between lines
  double redraw_interval_s = 0.1;  // terminal mode: seconds between redraws
  ProgressMode mode = ProgressMode::Auto;
};

// A rate as progress lines show it: "733/s", "2.5/s", or for items slower than one per 10 s the time each takes
// ("37 s each", "2.3 min each").
std::string format_rate(double per_s);

class Progress {
 public:
  // `label` names the stage ("chunk"), `unit` the items ("documents"); total 0 means unknown (no bar, no ETA).
  Progress(std::string label, std::string unit, uint64_t total, ProgressOptions options = {});
  ~Progress();  // finishes if finish() was not called
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(uint64_t n = 1);
  // Prints the summary line ("chunk: 3081 documents in 4.2 s (733/s)"); later calls do nothing.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void report(uint64_t done, bool final);
  std::string status_line(uint64_t done, double elapsed_s, bool final) const;

  std::string label_;
  std::string unit_;
  uint64_t total_;
  ProgressOptions options_;
  bool terminal_ = false;
  Clock::time_point start_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> next_report_ns_;  // since start_; the thread that passes it first reports
  std::mutex print_mutex_;
  bool finished_ = false;  // guarded by print_mutex_
};

}  // namespace kvf
