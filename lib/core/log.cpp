#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace kvf {
namespace {
std::atomic<LogLevel> g_level{LogLevel::Notes};
}  // namespace

void set_log_level(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }

LogLevel log_level() { return g_level.load(std::memory_order_relaxed); }

void note(const char* format, ...) {
  if (!notes_shown()) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

}  // namespace kvf
