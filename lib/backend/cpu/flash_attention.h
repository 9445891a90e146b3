// Attention for the fast compute mode: tiles of keys with an online softmax, no score matrix, f32 sums. Two kernels,
// chosen by the kernel table (cpu_kernels.h, attention): bf16 inputs with AVX-512 BF16 (flash_attention_bf16.cpp),
// else f32 with AVX2 and FMA (flash_attention_avx2.cpp). CpuBackend::attention and attention_blocks take one when the
// call's bf16_inputs asks for the fast mode and the head size suits it (attention: with no probe attached;
// attention_blocks: for more than 16 query rows); otherwise the f32 kernels.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace kvf::cpu {

bool flash_attention_bf16_available(int64_t head_dim);  // the table's AVX-512 BF16 kernel, head_dim a multiple of 64
void flash_attention_bf16(const AttentionArgs& args);   // no probe
// The blocks' keys read where they lie, in position order: the same results as staging them (bit for bit).
void flash_attention_bf16(const BlockAttentionArgs& args);

bool flash_attention_avx2_available(int64_t head_dim);  // either table kernel, head_dim a multiple of 16
void flash_attention_avx2(const AttentionArgs& args);   // no probe
void flash_attention_avx2(const BlockAttentionArgs& args);

// The fast mode's kernel for the table and this head size (AVX-512 BF16 first), or null: the f32 kernels.
struct FlashKernel {
  void (*attend)(const AttentionArgs&);
  void (*attend_blocks)(const BlockAttentionArgs&);
};
const FlashKernel* fast_flash_kernel(int64_t head_dim);

}  // namespace kvf::cpu
