#include "core/cpu_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace kvf {

namespace {

// The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal guest guest_nice", in clock
// ticks summed over CPUs. Busy is all but idle and iowait (guest time is already inside user and nice).
double busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string label;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || label != "cpu")
    return -1;
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? (double)(user + nice + system + irq + softirq + steal) / (double)ticks : -1;
}

double self_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

CpuSample sample_cpu() {
  CpuSample s;
  s.busy_s = busy_seconds();
  s.self_s = self_seconds();
  s.at = std::chrono::steady_clock::now();
  return s;
}

double others_cpu_share(const CpuSample& from, const CpuSample& to) {
  const double wall = std::chrono::duration<double>(to.at - from.at).count();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (from.busy_s < 0 || to.busy_s < 0 || wall <= 0 || cpus <= 0) return NAN;
  // The kernel counts busy time in ticks and this process's time in microseconds: clamp the rounding below 0.
  const double others = (to.busy_s - from.busy_s) - (to.self_s - from.self_s);
  return std::clamp(others / (wall * (double)cpus), 0.0, 1.0);
}

}  // namespace kvf
