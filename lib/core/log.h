// How much a process says on stderr besides its errors: progress bars and lines (core/progress.h) and notes
// ("eval: 3 of 10 questions already in ..."). One level for the whole process, set once by a CLI (--quiet) before
// its command runs; library code asks it through note() and Progress, so results (stdout) and errors are never
// affected.
#pragma once

namespace kvf {

enum class LogLevel {
  Errors,  // errors only: no progress, no notes (--quiet)
  Notes,   // progress and notes too (the default)
};

void set_log_level(LogLevel level);
LogLevel log_level();
inline bool notes_shown() { return log_level() >= LogLevel::Notes; }

// printf to stderr, unless the level is Errors.
void note(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kvf
