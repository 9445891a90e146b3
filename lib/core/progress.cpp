#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace kvf {
namespace {

// "42 s", "3m05s", "2h07m": short enough for a one-line bar.
std::string format_duration(double seconds) {
  char buf[32];
  const long s = std::lround(seconds);
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%ld s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

int64_t seconds_to_ns(double s) { return (int64_t)(s * 1e9); }

}  // namespace

std::string format_rate(double per_s) {
  char buf[32];
  if (per_s > 0 && per_s < 0.1) {  // "0.0/s" would say nothing: give the time one item takes
    const double each_s = 1 / per_s;
    if (each_s < 120)
      std::snprintf(buf, sizeof buf, "%.0f s each", each_s);
    else
      std::snprintf(buf, sizeof buf, "%.1f min each", each_s / 60);
  } else {
    std::snprintf(buf, sizeof buf, per_s >= 100 ? "%.0f/s" : "%.1f/s", per_s);
  }
  return buf;
}

Progress::Progress(std::string label, std::string unit, uint64_t total, ProgressOptions options)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), options_(options), start_(Clock::now()) {
  if (options_.out == stderr && !notes_shown()) options_.out = nullptr;  // --quiet
  if (options_.out) {
    terminal_ = options_.mode == ProgressMode::Terminal ||
                (options_.mode == ProgressMode::Auto && isatty(fileno(options_.out)));
  }
  next_report_ns_ = seconds_to_ns(terminal_ ? options_.redraw_interval_s : options_.log_interval_s);
}

Progress::~Progress() { finish(); }

void Progress::advance(uint64_t n) {
  const uint64_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
  if (!options_.out) return;
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  int64_t due = next_report_ns_.load(std::memory_order_relaxed);
  if (now_ns < due) return;
  // One thread wins the right to print this report; the others carry on.
  const double interval = terminal_ ? options_.redraw_interval_s : options_.log_interval_s;
  if (next_report_ns_.compare_exchange_strong(due, now_ns + seconds_to_ns(interval))) report(done, false);
}

void Progress::finish() { report(done_.load(), true); }

void Progress::report(uint64_t done, bool final) {
  if (!options_.out) return;
  std::lock_guard<std::mutex> lock(print_mutex_);
  if (finished_) return;
  finished_ = final;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const std::string line = status_line(done, elapsed, final);
  if (terminal_) {
    // Carriage return and clear-to-end-of-line redraw the bar in place.
    std::fprintf(options_.out, "\r%s\x1b[K%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(options_.out, "%s\n", line.c_str());
  }
  std::fflush(options_.out);
}

std::string Progress::status_line(uint64_t done, double elapsed_s, bool final) const {
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0.0;
  // The summary of a stage that ran to the end shows just the count.
  const bool show_total = total_ > 0 && (!final || done != total_);
  const std::string count = show_total ? std::to_string(done) + "/" + std::to_string(total_) : std::to_string(done);
  if (final) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f s", elapsed_s);
    return label_ + ": " + count + " " + unit_ + " in " + secs + " (" + format_rate(rate) + ")";
  }
  std::string line = label_ + (terminal_ ? " " : ": ");
  if (total_ > 0) {
    const double fraction = std::min(1.0, (double)done / total_);
    if (terminal_) {
      constexpr int kBarWidth = 24;
      const int filled = (int)(fraction * kBarWidth);
      line += "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
    }
    char percent[16];
    std::snprintf(percent, sizeof percent, " (%.0f%%)", 100 * fraction);
    line += count + " " + unit_ + percent + ", " + format_rate(rate);
    if (rate > 0 && done < total_) line += ", ETA " + format_duration((total_ - done) / rate);
  } else {
    line += count + " " + unit_ + ", " + format_rate(rate);
  }
  return line;
}

}  // namespace kvf
