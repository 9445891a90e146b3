// Decoder weights dequantized at load into backend tensors of the compute dtype (f32 on the CPU).
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/llama_config.h"

namespace kvf {

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
LlamaWeights load_llama_weights(const gguf::File& file, const LlamaConfig& config, Backend& backend);

}  // namespace kvf
