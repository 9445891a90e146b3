#include "backend/cpu/cpu_features.h"

#include "core/cpu_info.h"
#include "core/cpuid.h"

namespace kvf::cpu {
namespace {

CpuFeatures detect() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.model = read_cpu_info().model;
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = f.avx512 && cpu_has_avx512_bf16();
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.amx_bf16 = cpu_has_amx_bf16();
  f.amx_int8 = cpu_has_amx_int8();
  return f;
}

}  // namespace

std::string CpuFeatures::flags() const {
  std::string out;
  const auto add = [&](bool on, const char* name) {
    if (on) out += (out.empty() ? "" : " ") + std::string(name);
  };
  add(avx2_fma, "avx2+fma");
  add(avx512, "avx512");
  add(avx512_bf16, "avx512_bf16");
  add(avx512_vnni, "avx512_vnni");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  return out;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace kvf::cpu
