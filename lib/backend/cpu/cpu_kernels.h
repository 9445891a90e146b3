// The CPU kernel table: for each kernel family, the kernel this process runs, decided once from the CPU's features
// (cpu_features.h) and one override, the environment variable KVF_GEMM_KERNEL. Every kernel file asks this table,
// so one variable moves every family at once and the tests can run each family's other kernels on one CPU.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace kvf::cpu {

struct CpuFeatures;

// Matmul kernels for compact weights (bf16, f16, ggml blocks), best first.
enum class GemmKernel {
  AmxBf16,     // the Avx512Bf16 panels and activations, multiplied in AMX tiles (tdpbf16ps into f32)
  Avx512Bf16,  // weights dequantized to bf16 panels, activations rounded to bf16, vdpbf16ps into f32
  Avx2Int16,   // block formats widened to 16-bit integer panels, activations rounded to 16-bit integers per block
               // of 32 (int_dot.h), vpmaddwd into 32-bit sums, block scales in f32; other weights as Avx2F32
  Avx2F32,     // weights dequantized to f32 panels, f32 activations, FMA
};
// Integer dot products of activation rows with block-format weight rows (int_dot.h), best first.
enum class IntDotKernel {
  Avx512Vnni,  // 16-bit activations, vpdpwssd; also the column kernel of few-row passes and the weights interleaved
               // for it
  Avx2Int8,    // 8-bit activations (blocks of 32, as llama.cpp's q8_1), vpmaddubsw then vpmaddwd with ones
  Avx2,        // 16-bit activations, vpmaddwd
  None,
};
// The fast compute mode's attention (flash_attention.h), best first.
enum class AttentionKernel {
  Avx512Bf16,  // bf16 inputs, head sizes a multiple of 64 (others take Avx2)
  Avx2,        // f32, head sizes a multiple of 16
  F32,         // the portable f32 kernels only
};

struct CpuKernels {
  std::vector<GemmKernel> matmul_kernels;  // every matmul kernel this CPU runs, best first
  std::optional<GemmKernel> matmul;        // the one matmuls use; none on a CPU with no matmul kernel
  IntDotKernel int_dot = IntDotKernel::None;
  AttentionKernel attention = AttentionKernel::F32;
  bool bf16_dots = false;  // a few rows times bf16 weights in bf16 dot products (AVX-512 BF16), else in f32
  bool avx2 = false;       // AVX2 code bit for bit equal to the portable code: dequantization, 16-bit rounding
};

const char* gemm_kernel_name(GemmKernel kernel);  // amx-bf16 | avx512-bf16 | avx2-int16 | avx2
const char* int_dot_kernel_name(IntDotKernel kernel);
const char* attention_kernel_name(AttentionKernel kernel);

// The table for a CPU with features f (amx_usable: AMX BF16 may run in this process, amx_bf16_usable). With no
// override, each family's best kernel (on AVX2 without AVX-512 VNNI, the integer kernel kIntDotAvx2Default). An
// override names a matmul kernel: matmuls take it, and an AVX2 one holds every other family to its AVX2 kernel too
// (the integer one avx2, 16-bit), so that those run on AVX-512 CPUs as well; or it is avx2-int8, which is
// avx2-int16 with the integer kernel avx2-int8. A name that is unknown or
// that the CPU lacks throws kvf::Error naming KVF_GEMM_KERNEL, the name, the CPU and the kernels it runs.
CpuKernels choose_cpu_kernels(const CpuFeatures& f, bool amx_usable, const std::string& override_name);
// The integer kernel of AVX2 CPUs without AVX-512 VNNI when nothing is named (docs/engine.md#int8-activations).
extern const IntDotKernel kIntDotAvx2Default;

// This process's table: choose_cpu_kernels for this CPU and KVF_GEMM_KERNEL, decided on the first call.
const CpuKernels& cpu_kernels();
// cpu_kernels().matmul; throws kvf::Error on a CPU with no matmul kernel.
GemmKernel active_gemm_kernel();
// "matmul avx512-bf16 (this CPU runs ...), block dot products avx512-vnni, attention avx512-bf16", or the reason
// there is no table ("matmul none (KVF_GEMM_KERNEL=...)"): what --version and eval records report.
std::string cpu_kernels_report();

}  // namespace kvf::cpu
