// Hyper-parameters of a Llama-family decoder (llama, qwen2, mistral as llama; LCKV llama), read from GGUF metadata.
#pragma once
#include <string>

#include "backend/backend.h"
#include "model/condensed_kv.h"

namespace kvf {

namespace gguf { class File; }

struct LlamaConfig {
  std::string arch;  // GGUF general.architecture
  int n_layers = 0;
  int hidden = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;
  int vocab = 0;
  int context_length = 0;
  float norm_eps = 1e-5f;
  // RoPE
  double rope_theta = 10000.0;
  int rotary_dim = 0;
  RopePairing rope_pairing = RopePairing::Adjacent;
  std::string rope_scaling = "none";  // none | linear (plus per-frequency factors from a rope_freqs tensor)
  double rope_scaling_factor = 1.0;
  CondensedKv condensed;  // layer-condensed KV (<arch>.lckv.* keys); inactive for a plain model
};

// Throws kvf::Error naming the file and the key for a missing or out-of-range value, or an unknown architecture.
LlamaConfig llama_config_from_gguf(const gguf::File& file);

}  // namespace kvf
