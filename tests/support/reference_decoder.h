// A deliberately naive Llama forward pass in double precision, written from the model definition (RMSNorm,
// RoPE, GQA causal attention, SwiGLU) and sharing nothing with lib/model but the GGUF reader: the independent
// reference the engine's tiny-model tests compare against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf::test {

// Logits [n][vocab] of a plain causal prefill of `tokens` at positions 0..n-1.
std::vector<std::vector<double>> reference_logits(const std::string& gguf_path, const std::vector<int32_t>& tokens);

}  // namespace kvf::test
