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
  // none | linear | yarn (plus per-frequency factors from a rope_freqs tensor: how llama3 scaling arrives)
  std::string rope_scaling = "none";
  double rope_scaling_factor = 1.0;
  // yarn: rope.scaling.original_context_length (else context_length); beta_fast / beta_slow are llama.cpp's
  // defaults (32, 1), which it takes from its context parameters. rope.scaling.attn_factor (default 1) multiplies
  // cos and sin for every kind, as in llama.cpp.
  int rope_original_context = 0;
  float rope_attn_factor = 1.0f;
  // Mistral-style sliding-window attention (<arch>.attention.sliding_window; 0: none). kvfuse does not mask by
  // it: context_length is capped at the window, where attention with and without it agree.
  int sliding_window = 0;
  CondensedKv condensed;  // layer-condensed KV (<arch>.lckv.* keys); inactive for a plain model
};

// Throws kvf::Error naming the file and the key for a missing or out-of-range value, or an unknown architecture.
LlamaConfig llama_config_from_gguf(const gguf::File& file);

}  // namespace kvf
