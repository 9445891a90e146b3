// Random-weight Llama-family models written as GGUF files: tiny ones so the engine tests need no download, and
// the shapes of real models (SmolLM2-135M, Qwen2.5 0.5B and 7B, and the papers' Mistral-7B-v0.2, Llama-3.1-8B
// and Qwen2.5-7B) for benchmarks on machines the weights cannot travel to. The same spec and seed always give
// the same file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/ggml_types.h"

namespace kvf {

struct RandomModelSpec {
  std::string arch = "llama";  // "qwen2" adds Q/K/V biases and half-split RoPE
  int n_layers = 2;
  int hidden = 64;
  int n_heads = 4;
  int n_kv_heads = 2;
  int ffn = 128;
  int vocab = 97;
  int context = 512;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;      // <arch>.attention.layer_norm_rms_epsilon
  bool tied_output = true;    // false: an output.weight of its own (else llama.cpp reuses token_embd)
  GgmlType matrix_type = GgmlType::F32;  // storage type of the 2-D weights
  uint32_t seed = 42;
  // A GGUF whose tokenizer.* metadata (vocabulary, merges, chat template) the model takes, its vocabulary size
  // replacing `vocab`: a model that kvprep and kvrun can run on text. Empty: no tokenizer.
  std::string tokenizer_from;
  // Non-empty: tokenizer.chat_template is this text (replacing tokenizer_from's).
  std::string chat_template;
  // Layer-condensed KV (model/condensed_kv.h): layer i reads the KV of layer lckv_kv_layers[i]; layers that read
  // another have no K/V projection. Empty: a plain model.
  std::vector<int32_t> lckv_kv_layers;
  int lckv_prompt_iterations = 9;
  bool lckv_mask_every_diagonal = false;
  // RoPE scaling metadata as llama.cpp reads it: "none", "linear" or "yarn" (rope.scaling.type, .factor, and for
  // yarn .original_context_length when rope_original_context > 0); rope_freq_factors non-empty adds a rope_freqs
  // tensor of per-frequency divisors (how llama3 scaling arrives), rotary_dim / 2 of them.
  std::string rope_scaling = "none";
  float rope_scaling_factor = 1.0f;
  int rope_original_context = 0;
  std::vector<float> rope_freq_factors;
  int sliding_window = 0;  // > 0: <arch>.attention.sliding_window (Mistral's)
  // Writes a placeholder SentencePiece-style vocabulary (tokenizer.ggml.model = llama: <unk>, <s>, </s>, the 256
  // byte tokens, then t<i>) of `vocab` tokens (at least 259) when there is no tokenizer_from: enough for llama.cpp
  // to load the file and compute logits of token ids.
  bool placeholder_vocab = false;
};

// The shape of a real model: "smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-7b", "mistral-7b-v0.2" or
// "llama-3.1-8b" (all its layers; set n_layers for fewer): dimensions, context, RoPE (Llama 3.1's llama3 scaling
// as a rope_freqs tensor), RMS epsilon, and an output matrix of its own where the model does not tie it to the
// embeddings. Throws kvf::Error listing the names for any other.
RandomModelSpec real_model_shape(const std::string& name);
std::vector<std::string> real_model_shape_names();

// Llama 3.1's RoPE scaling (rope_type llama3) as the per-frequency divisors llama.cpp's converter writes into the
// rope_freqs tensor: head_dim / 2 of them.
std::vector<float> llama3_rope_freq_factors(int head_dim, double theta, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context);

// Writes the model to `path` (through "<path>.<pid>.tmp"). Weights are drawn from a counter-based generator, one
// stream per tensor, in parallel: a 7B shape takes seconds, not minutes. Scales keep activations O(1) and
// attention neither uniform nor one-hot.
void write_random_model(const RandomModelSpec& spec, const std::string& path);

// Writes a GGUF holding only the tokenizer.* metadata of `source` (no tensors): a few MB that let a random model
// of that vocabulary be written where the source model is not (RandomModelSpec::tokenizer_from).
void write_tokenizer_only(const std::string& source, const std::string& path);

}  // namespace kvf
