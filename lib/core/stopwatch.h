// Time since a steady-clock instant: the one way phase timings (prefill, select, load, ...) and stage durations are
// taken.
#pragma once
#include <chrono>

namespace kvf {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kvf
