// How busy the machine's CPUs were while a piece of work ran, this process's time apart from everyone else's:
// a timing taken while other work used the cores is not the timed method's own, and a report should say so.
#pragma once
#include <chrono>

namespace kvf {

struct CpuSample {
  double busy_s = -1;  // every CPU's busy time since boot, summed (/proc/stat); -1 where it cannot be read
  double self_s = 0;   // this process's user + system time (getrusage)
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
};

CpuSample sample_cpu();

// Other processes' CPU time between two samples, as a share of the wall time times the online CPUs: 0 when
// nothing else ran, 0.5 when others kept half of the cores busy. NAN where /proc/stat is unavailable.
double others_cpu_share(const CpuSample& from, const CpuSample& to);

// Above this share of the CPUs, other work ran beside a timing (the benchmarks' and eval's one threshold).
inline constexpr double kOthersCpuNoticed = 0.05;

}  // namespace kvf
