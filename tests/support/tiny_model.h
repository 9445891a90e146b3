// Tiny random-weight Llama-family models written as GGUF files with a fixed seed, so engine tests need no
// download and run in milliseconds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/ggml_types.h"

namespace kvf::test {

struct TinyModelSpec {
  std::string arch = "llama";  // "qwen2" adds Q/K/V biases and half-split RoPE
  int n_layers = 2;
  int hidden = 64;
  int n_heads = 4;
  int n_kv_heads = 2;
  int ffn = 128;
  int vocab = 97;
  int context = 512;
  float rope_theta = 10000.0f;
  GgmlType matrix_type = GgmlType::F32;  // storage type of the 2-D weights
  uint32_t seed = 42;
  // A GGUF whose tokenizer.* metadata (vocabulary, merges, chat template) the model takes, its vocabulary size
  // replacing `vocab`: a tiny model that kvprep and kvrun can run on text. Empty: no tokenizer.
  std::string tokenizer_from;
  // Layer-condensed KV (model/condensed_kv.h): layer i reads the KV of layer lckv_kv_layers[i]; layers that read
  // another have no K/V projection. Empty: a plain model.
  std::vector<int32_t> lckv_kv_layers;
  int lckv_prompt_iterations = 9;
  bool lckv_mask_every_diagonal = false;
};

// Writes the model to a unique file under the test temp dir and returns its path.
std::string write_tiny_model(const TinyModelSpec& spec);

}  // namespace kvf::test
