// The CPU kernel table (lib/backend/cpu/cpu_kernels.h) for CPUs of every kind, whatever CPU runs the test: each
// family's best kernel by default, an AVX2 override holding every family to AVX2 on AVX-512 CPUs, and an override
// the CPU cannot honour refused with a message naming the variable, the value and the CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "core/error.h"

namespace kvf {
namespace {

using cpu::AttentionKernel;
using cpu::CpuFeatures;
using cpu::CpuKernels;
using cpu::GemmKernel;
using cpu::IntDotKernel;

CpuFeatures avx2_cpu() {  // e.g. AMD Zen 3
  CpuFeatures f;
  f.model = "AVX2 CPU";
  f.avx2_fma = true;
  return f;
}

CpuFeatures vnni_cpu() {  // AVX-512 VNNI without BF16, e.g. Intel Cascade Lake
  CpuFeatures f = avx2_cpu();
  f.model = "VNNI CPU";
  f.avx512 = f.avx512_vnni = true;
  return f;
}

CpuFeatures bf16_cpu() {  // AVX-512 BF16 and VNNI, e.g. AMD Zen 4 (with AMX: Intel Sapphire Rapids)
  CpuFeatures f = vnni_cpu();
  f.model = "BF16 CPU";
  f.avx512_bf16 = true;
  return f;
}

std::string refusal(const CpuFeatures& f, const std::string& name) {
  try {
    cpu::choose_cpu_kernels(f, false, name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CpuKernels, EachFamilyTakesTheBestKernelTheCpuHas) {
  const CpuKernels amx = cpu::choose_cpu_kernels(bf16_cpu(), true, "");
  EXPECT_EQ(amx.matmul, GemmKernel::AmxBf16);
  EXPECT_EQ(amx.matmul_kernels.size(), 4u);
  EXPECT_EQ(amx.int_dot, IntDotKernel::Avx512Vnni);
  EXPECT_EQ(amx.attention, AttentionKernel::Avx512Bf16);
  EXPECT_TRUE(amx.bf16_dots && amx.avx2);
  EXPECT_EQ(cpu::choose_cpu_kernels(bf16_cpu(), false, "").matmul, GemmKernel::Avx512Bf16);

  // AVX-512 VNNI without BF16: AVX2 panels and attention, but the VNNI integer dot products.
  const CpuKernels vnni = cpu::choose_cpu_kernels(vnni_cpu(), false, "");
  EXPECT_EQ(vnni.matmul, GemmKernel::Avx2Int16);
  EXPECT_EQ(vnni.int_dot, IntDotKernel::Avx512Vnni);
  EXPECT_EQ(vnni.attention, AttentionKernel::Avx2);
  EXPECT_FALSE(vnni.bf16_dots);

  const CpuKernels avx2 = cpu::choose_cpu_kernels(avx2_cpu(), false, "");
  EXPECT_EQ(avx2.matmul, GemmKernel::Avx2Int16);
  EXPECT_EQ(avx2.int_dot, cpu::kIntDotAvx2Default);
  EXPECT_EQ(avx2.attention, AttentionKernel::Avx2);
  EXPECT_TRUE(avx2.avx2 && !avx2.bf16_dots);

  const CpuKernels none = cpu::choose_cpu_kernels(CpuFeatures{}, false, "");  // only --compute f32 runs
  EXPECT_FALSE(none.matmul.has_value());
  EXPECT_EQ(none.int_dot, IntDotKernel::None);
  EXPECT_EQ(none.attention, AttentionKernel::F32);
  EXPECT_FALSE(none.avx2 || none.bf16_dots);
}

TEST(CpuKernels, AnAvx2OverrideHoldsEveryFamilyToAvx2) {
  for (const char* name : {"avx2", "avx2-int16"}) {
    const CpuKernels k = cpu::choose_cpu_kernels(bf16_cpu(), true, name);
    EXPECT_EQ(cpu::gemm_kernel_name(*k.matmul), std::string(name));
    EXPECT_EQ(k.int_dot, IntDotKernel::Avx2) << name;
    EXPECT_EQ(k.attention, AttentionKernel::Avx2) << name;
    EXPECT_FALSE(k.bf16_dots) << name;
    EXPECT_EQ(cpu::choose_cpu_kernels(vnni_cpu(), false, name).int_dot, IntDotKernel::Avx2) << name;
  }
  // An AVX-512 matmul keeps the other families' AVX-512 kernels.
  const CpuKernels avx512 = cpu::choose_cpu_kernels(bf16_cpu(), true, "avx512-bf16");
  EXPECT_EQ(avx512.matmul, GemmKernel::Avx512Bf16);
  EXPECT_EQ(avx512.int_dot, IntDotKernel::Avx512Vnni);
  EXPECT_EQ(avx512.attention, AttentionKernel::Avx512Bf16);
  EXPECT_TRUE(avx512.bf16_dots);
}

// avx2-int8 is the avx2-int16 matmul with 8-bit activations in the integer dot products, on every AVX2 CPU.
TEST(CpuKernels, TheInt8OverrideTakesTheInt16PanelsAndTheInt8DotProducts) {
  for (const CpuFeatures& f : {avx2_cpu(), vnni_cpu(), bf16_cpu()}) {
    const CpuKernels k = cpu::choose_cpu_kernels(f, true, "avx2-int8");
    EXPECT_EQ(k.matmul, GemmKernel::Avx2Int16) << f.model;
    EXPECT_EQ(k.int_dot, IntDotKernel::Avx2Int8) << f.model;
    EXPECT_EQ(k.attention, AttentionKernel::Avx2) << f.model;
    EXPECT_FALSE(k.bf16_dots) << f.model;
  }
  EXPECT_EQ(cpu::int_dot_kernel_name(IntDotKernel::Avx2Int8), std::string("avx2-int8"));
  EXPECT_EQ(refusal(CpuFeatures{}, "avx2-int8"), "KVF_GEMM_KERNEL='avx2-int8': this CPU () runs none");
}

TEST(CpuKernels, AnOverrideTheCpuLacksNamesTheVariableTheValueAndTheCpu) {
  EXPECT_EQ(refusal(avx2_cpu(), "avx512-bf16"),
            "KVF_GEMM_KERNEL='avx512-bf16': this CPU (AVX2 CPU) runs avx2-int16, avx2");
  EXPECT_EQ(refusal(bf16_cpu(), "amx-bf16"),
            "KVF_GEMM_KERNEL='amx-bf16': this CPU (BF16 CPU) runs avx512-bf16, avx2-int16, avx2");
  EXPECT_EQ(refusal(bf16_cpu(), "sse"),
            "KVF_GEMM_KERNEL='sse': this CPU (BF16 CPU) runs avx512-bf16, avx2-int16, avx2");
  EXPECT_EQ(refusal(CpuFeatures{}, "avx2"), "KVF_GEMM_KERNEL='avx2': this CPU () runs none");
}

// This process's table is the one for this CPU and the environment (ctest runs the kernel tests again with
// KVF_GEMM_KERNEL=avx2, tests/CMakeLists.txt).
TEST(CpuKernels, TheProcessTableIsThisCpusAndTheOverrides) {
  const char* name = std::getenv("KVF_GEMM_KERNEL");
  const CpuKernels want = cpu::choose_cpu_kernels(cpu::cpu_features(), cpu::amx_bf16_usable(), name ? name : "");
  const CpuKernels& got = cpu::cpu_kernels();
  EXPECT_EQ(got.matmul_kernels, want.matmul_kernels);
  EXPECT_EQ(got.matmul, want.matmul);
  EXPECT_EQ(got.int_dot, want.int_dot);
  EXPECT_EQ(got.attention, want.attention);
  EXPECT_EQ(got.bf16_dots, want.bf16_dots);
  EXPECT_EQ(got.avx2, want.avx2);
  if (got.matmul) {
    const std::string matmul = cpu::gemm_kernel_name(*got.matmul);
    EXPECT_EQ(cpu::cpu_kernels_report().rfind("matmul " + matmul + " ", 0), 0u);
  }
}

}  // namespace
}  // namespace kvf
