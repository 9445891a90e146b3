// A Hugging Face decoder's config.json (llama, mistral, qwen2, lckv-llama) read and checked, and written as the GGUF metadata
// llama.cpp's converter would write for it, so that the rest of kvfuse reads one description of a decoder.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace kvf {

struct HfDecoderConfig {
  std::string path;        // the config.json read, for errors
  std::string model_type;  // "llama", "mistral", "qwen2", "lckv-llama"
  std::string arch;        // the GGUF architecture: "llama" (llama, mistral) or "qwen2"
  int64_t n_layers = 0, hidden = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  int64_t context_length = 0;  // max_position_embeddings, capped by a sliding window
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::string rope_scaling = "none";  // none | linear | llama3 | yarn
  double rope_factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  // llama3 (default 8192); yarn: original_max_position_embeddings, 0 when absent (then the context length)
  int64_t original_context = 8192;
  bool tie_embeddings = false;
  int64_t bos_id = -1, eos_id = -1;  // bos_token_id / eos_token_id (the first of a list); -1 when absent
  // lckv-llama (the LCKV release): layer_types "0_20_20_..._21" (layer i reads the KV of that layer), the prompt
  // passes forward_passes + backward_passes (0 with use_sequential: one per token), force_nodiag.
  std::vector<int64_t> kv_layers;
  int64_t prompt_iterations = 9;
  bool mask_every_diagonal = false;
};

// Throws kvf::Error naming the file, the field and the value on anything missing, malformed or unsupported.
HfDecoderConfig read_hf_config(const std::string& path);

// general.architecture and the "<arch>." keys.
void add_hf_config_metadata(const HfDecoderConfig& config, std::map<std::string, gguf::Value>& metadata);

// llama3 rope scaling as per-frequency factors (one per rotary pair), the form GGUF stores it in (rope_freqs).
std::vector<float> llama3_rope_factors(const HfDecoderConfig& config);

}  // namespace kvf
