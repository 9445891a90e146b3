// Decoder weights in backend tensors: in the fast compute mode the matmul weights stay in the GGUF's block format
// (f32 and f16 tensors become bf16) wherever the backend takes that format; in the f32 mode, and for every other
// tensor (norms, biases), they are dequantized to f32 at load.
#pragma once
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/llama_config.h"

namespace kvf {

enum class ComputeMode {
  Fast,  // compact weights, the backend's fastest kernels (on the CPU: bf16 dot products where the CPU has them)
  F32,   // every weight in f32, f32 math throughout: the reference the fast mode is measured against
};
const char* compute_mode_name(ComputeMode mode);                // "fast" | "f32"
ComputeMode compute_mode_from_name(const std::string& name);    // throws kvf::Error naming a bad value

struct LlamaLayerWeights {
  Tensor attn_norm, wq, wk, wv, wo;  // w*: [out, in]
  Tensor bq, bk, bv;                 // optional biases (qwen2); undefined when absent
  Tensor ffn_norm, w_gate, w_up, w_down;
};

struct LlamaWeights {
  Tensor token_embd;   // [vocab, hidden]
  Tensor output_norm;  // [hidden]
  Tensor output;       // [vocab, hidden]; shares token_embd's storage when the model ties them
  std::vector<LlamaLayerWeights> layers;
  std::vector<float> rope_freq_factors;  // from rope_freqs.weight when present
};

// Reads every tensor the config needs, checking its shape; throws naming the tensor on any mismatch.
LlamaWeights load_llama_weights(const gguf::File& file, const LlamaConfig& config, Backend& backend,
                                ComputeMode mode);

}  // namespace kvf
