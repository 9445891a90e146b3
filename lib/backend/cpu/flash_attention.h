// Attention for the fast compute mode: bf16 inputs, f32 sums, tiles of keys with an online softmax
// (flash_attention_bf16.cpp says how). CpuBackend::attention and attention_blocks take it when the call's
// bf16_inputs asks for it, the CPU has AVX-512 BF16 and the head size is a multiple of 64 (attention: with no
// probe attached; attention_blocks: for more than 16 query rows); otherwise the f32 kernels.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace kvf::cpu {

bool flash_attention_bf16_available(int64_t head_dim);
void flash_attention_bf16(const AttentionArgs& args);  // no probe
// The blocks' keys read where they lie, in position order: the same results as staging them (bit for bit).
void flash_attention_bf16(const BlockAttentionArgs& args);

}  // namespace kvf::cpu
