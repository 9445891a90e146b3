// What this CPU's vector and matrix units can do, read once at run time. Builds target the build machine
// (-march=native), but kernels carry their own target attributes and the kernel table (cpu_kernels.h) picks them
// from these features, so the best one runs on each CPU and the others stay testable on it.
#pragma once
#include <string>

namespace kvf::cpu {

struct CpuFeatures {
  std::string model;  // /proc/cpuinfo "model name"
  bool avx2_fma = false, avx512 = false, avx512_bf16 = false, avx512_vnni = false, amx_bf16 = false,
       amx_int8 = false;
  std::string flags() const;  // the features above that are present, space-separated
};
const CpuFeatures& cpu_features();

}  // namespace kvf::cpu
