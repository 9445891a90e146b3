#include "core/cpu_info.h"

#include <fstream>

namespace kvf {

CpuInfo read_cpu_info() {
  CpuInfo info;
  bool have_model = false;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("processor", 0) == 0) ++info.processors;
    if (have_model || line.rfind("model name", 0) != 0) continue;
    have_model = true;
    const size_t colon = line.find(':');
    const size_t value = colon == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", colon + 1);
    info.model = colon == std::string::npos ? line : value == std::string::npos ? "" : line.substr(value);
  }
  return info;
}

}  // namespace kvf
