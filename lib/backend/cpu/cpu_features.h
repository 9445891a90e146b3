// What this CPU's vector and matrix units can do, read once at run time, and the matmul kernel chosen from it.
// Builds target the build machine (-march=native), but kernels carry their own target attributes and are picked
// here, so the best one runs on each CPU and the others stay testable on it (KVF_GEMM_KERNEL).
#pragma once
#include <string>
#include <vector>

namespace kvf::cpu {

struct CpuFeatures {
  std::string model;  // /proc/cpuinfo "model name"
  bool avx2_fma = false, avx512 = false, avx512_bf16 = false, avx512_vnni = false, amx_bf16 = false,
       amx_int8 = false;
  std::string flags() const;  // the features above that are present, space-separated
};
const CpuFeatures& cpu_features();

// Matmul kernels for compact weights (bf16, f16, ggml blocks), best first.
enum class GemmKernel {
  AmxBf16,     // the Avx512Bf16 panels and activations, multiplied in AMX tiles (tdpbf16ps into f32)
  Avx512Bf16,  // weights dequantized to bf16 panels, activations rounded to bf16, vdpbf16ps into f32
  Avx2Int16,   // block formats widened to 16-bit integer panels, activations rounded to 16-bit integers per block
               // of 32 (int_dot.h), vpmaddwd into 32-bit sums, block scales in f32; other weights as Avx2F32
  Avx2F32,     // weights dequantized to f32 panels, f32 activations, FMA
};
const char* gemm_kernel_name(GemmKernel kernel);
// The kernels this CPU can run, best first.
std::vector<GemmKernel> available_gemm_kernels();
// The kernel matmuls use: the best available, or the one KVF_GEMM_KERNEL names (amx-bf16 | avx512-bf16 |
// avx2-int16 | avx2);
// an unknown or unavailable name throws kvf::Error naming it and the kernels this CPU has.
GemmKernel active_gemm_kernel();

}  // namespace kvf::cpu
