// Attention for the fast compute mode: bf16 inputs, f32 sums, tiles of keys with an online softmax
// (flash_attention_bf16.cpp says how). CpuBackend::attention takes it when AttentionArgs::bf16_inputs asks for it,
// the CPU has AVX-512 BF16, the head size is a multiple of 64 and no probe is attached; otherwise the f32 path.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace kvf::cpu {

bool flash_attention_bf16_available(int64_t head_dim);
void flash_attention_bf16(const AttentionArgs& args);

}  // namespace kvf::cpu
