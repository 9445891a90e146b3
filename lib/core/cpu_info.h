// What /proc/cpuinfo says of this machine: the CPU's model name and the number of logical CPUs.
#pragma once
#include <string>

namespace kvf {

struct CpuInfo {
  std::string model = "unknown CPU";  // the first "model name" entry ("unknown CPU" where there is none)
  int processors = 0;                 // "processor" entries: the logical CPUs (0 where /proc/cpuinfo is unreadable)
};

// Reads /proc/cpuinfo anew on each call.
CpuInfo read_cpu_info();

}  // namespace kvf
