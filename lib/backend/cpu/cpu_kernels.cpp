#include "backend/cpu/cpu_kernels.h"

#include <cstdlib>
#include <exception>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/gemm_isa.h"
#include "core/error.h"

namespace kvf::cpu {
namespace {

constexpr const char* kOverride = "KVF_GEMM_KERNEL";
constexpr const char* kInt8 = "avx2-int8";  // avx2-int16 matmuls, avx2-int8 integer dot products

std::vector<GemmKernel> matmul_kernels_of(const CpuFeatures& f, bool amx_usable) {
  std::vector<GemmKernel> out;
  if (f.avx512_bf16 && amx_usable) out.push_back(GemmKernel::AmxBf16);
  if (f.avx512_bf16) out.push_back(GemmKernel::Avx512Bf16);
  if (f.avx2_fma) {
    out.push_back(GemmKernel::Avx2Int16);
    out.push_back(GemmKernel::Avx2F32);
  }
  return out;
}

std::string names_of(const std::vector<GemmKernel>& kernels) {
  std::string names;
  for (GemmKernel k : kernels) names += (names.empty() ? "" : ", ") + std::string(gemm_kernel_name(k));
  return names.empty() ? "none" : names;
}

GemmKernel named_kernel(const CpuKernels& table, const CpuFeatures& f, const std::string& name) {
  for (GemmKernel k : table.matmul_kernels)
    if (name == gemm_kernel_name(k) || (name == kInt8 && k == GemmKernel::Avx2Int16)) return k;
  fail(kOverride, "='", name, "': this CPU (", f.model, ") runs ", names_of(table.matmul_kernels));
}

}  // namespace

const IntDotKernel kIntDotAvx2Default = IntDotKernel::Avx2;

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::AmxBf16: return "amx-bf16";
    case GemmKernel::Avx512Bf16: return "avx512-bf16";
    case GemmKernel::Avx2Int16: return "avx2-int16";
    case GemmKernel::Avx2F32: return "avx2";
  }
  return "?";
}

const char* int_dot_kernel_name(IntDotKernel kernel) {
  switch (kernel) {
    case IntDotKernel::Avx512Vnni: return "avx512-vnni";
    case IntDotKernel::Avx2Int8: return "avx2-int8";
    case IntDotKernel::Avx2: return "avx2";
    case IntDotKernel::None: return "none";
  }
  return "?";
}

const char* attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::Avx512Bf16: return "avx512-bf16";
    case AttentionKernel::Avx2: return "avx2";
    case AttentionKernel::F32: return "f32";
  }
  return "?";
}

CpuKernels choose_cpu_kernels(const CpuFeatures& f, bool amx_usable, const std::string& override_name) {
  CpuKernels k;
  k.matmul_kernels = matmul_kernels_of(f, amx_usable);
  if (!override_name.empty())
    k.matmul = named_kernel(k, f, override_name);
  else if (!k.matmul_kernels.empty())
    k.matmul = k.matmul_kernels.front();
  const bool avx512 = override_name.empty() || *k.matmul == GemmKernel::AmxBf16 ||
                      *k.matmul == GemmKernel::Avx512Bf16;  // an AVX2 matmul named: AVX2 everywhere
  const IntDotKernel avx2_int_dot = override_name == kInt8 ? IntDotKernel::Avx2Int8
                                    : override_name.empty() ? kIntDotAvx2Default
                                                            : IntDotKernel::Avx2;
  k.int_dot = avx512 && f.avx512_vnni ? IntDotKernel::Avx512Vnni : f.avx2_fma ? avx2_int_dot : IntDotKernel::None;
  k.attention = avx512 && f.avx512_bf16 ? AttentionKernel::Avx512Bf16
                : f.avx2_fma            ? AttentionKernel::Avx2
                                        : AttentionKernel::F32;
  k.bf16_dots = avx512 && f.avx512_bf16;
  k.avx2 = f.avx2_fma;
  return k;
}

const CpuKernels& cpu_kernels() {
  static const CpuKernels table = [] {
    const char* name = std::getenv(kOverride);
    return choose_cpu_kernels(cpu_features(), amx_bf16_usable(), name ? name : "");
  }();
  return table;
}

GemmKernel active_gemm_kernel() {
  const CpuKernels& k = cpu_kernels();
  KVF_CHECK(k.matmul.has_value(), "this CPU (", cpu_features().model,
            ") has neither AVX2+FMA nor AVX-512 BF16; "
            "kvfuse needs one of them for compact weights (use --compute f32)");
  return *k.matmul;
}

std::string cpu_kernels_report() {
  try {
    const CpuKernels& k = cpu_kernels();
    return std::string("matmul ") + (k.matmul ? gemm_kernel_name(*k.matmul) : "none") + " (this CPU runs " +
           names_of(k.matmul_kernels) + "), block dot products " + int_dot_kernel_name(k.int_dot) + ", attention " +
           attention_kernel_name(k.attention);
  } catch (const std::exception& e) {  // KVF_GEMM_KERNEL names a kernel this CPU lacks
    return std::string("matmul none (") + e.what() + ")";
  }
}

}  // namespace kvf::cpu
