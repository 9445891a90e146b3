#include "backend/cpu/cpu_features.h"

#include <cstdlib>

#include "backend/cpu/gemm_isa.h"
#include "core/cpu_info.h"
#include "core/cpuid.h"
#include "core/error.h"

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

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::AmxBf16: return "amx-bf16";
    case GemmKernel::Avx512Bf16: return "avx512-bf16";
    case GemmKernel::Avx2Int16: return "avx2-int16";
    case GemmKernel::Avx2F32: return "avx2";
  }
  return "?";
}

std::vector<GemmKernel> available_gemm_kernels() {
  const CpuFeatures& f = cpu_features();
  std::vector<GemmKernel> out;
  if (f.avx512_bf16 && amx_bf16_usable()) out.push_back(GemmKernel::AmxBf16);
  if (f.avx512_bf16) out.push_back(GemmKernel::Avx512Bf16);
  if (f.avx2_fma) {
    out.push_back(GemmKernel::Avx2Int16);
    out.push_back(GemmKernel::Avx2F32);
  }
  return out;
}

GemmKernel active_gemm_kernel() {
  static const GemmKernel kernel = [] {
    const std::vector<GemmKernel> have = available_gemm_kernels();
    std::string names;
    for (GemmKernel k : have) names += (names.empty() ? "" : ", ") + std::string(gemm_kernel_name(k));
    KVF_CHECK(!have.empty(), "this CPU (", cpu_features().model, ") has neither AVX2+FMA nor AVX-512 BF16; kvfuse "
              "needs one of them for compact weights (use --compute f32)");
    const char* env = std::getenv("KVF_GEMM_KERNEL");
    if (!env || !*env) return have.front();
    for (GemmKernel k : have)
      if (gemm_kernel_name(k) == std::string(env)) return k;
    fail("KVF_GEMM_KERNEL='", env, "': this CPU (", cpu_features().model, ") runs ", names);
  }();
  return kernel;
}

}  // namespace kvf::cpu
