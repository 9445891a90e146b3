#include "model/llama_config.h"

#include <cmath>

#include "io/gguf.h"

namespace kvf {
namespace {

int positive(const gguf::File& f, const std::string& key, int64_t value) {
  KVF_CHECK(value > 0 && value < (1LL << 31), f.path(), ": metadata '", key, "' = ", value,
            " is not a positive 32-bit count");
  return (int)value;
}

// kvfuse's own keys for a layer-condensed model (io/hf_config.cpp writes them from an LCKV config.json).
void read_condensed_kv(const gguf::File& f, const std::string& a, LlamaConfig& c) {
  if (!f.has(a + "lckv.kv_layers")) return;
  for (int64_t src : f.get_int_array(a + "lckv.kv_layers")) {
    KVF_CHECK(src >= 0 && src < c.n_layers, f.path(), ": metadata '", a, "lckv.kv_layers' names layer ", src,
              " of a ", c.n_layers, "-layer model");
    c.condensed.kv_layer.push_back((int32_t)src);
  }
  const int64_t passes = f.get_int(a + "lckv.prompt_iterations", 9);
  KVF_CHECK(passes >= 0 && passes < 100000, f.path(), ": metadata '", a, "lckv.prompt_iterations' = ", passes,
            " is not a count of passes (0: one per token)");
  c.condensed.prompt_iterations = (int)passes;
  c.condensed.mask_every_diagonal = f.get_bool(a + "lckv.mask_every_diagonal", false);
  check_condensed_kv(c.condensed, c.n_layers, f.path() + ": metadata '" + a + "lckv.kv_layers'");
}

}  // namespace

LlamaConfig llama_config_from_gguf(const gguf::File& f) {
  LlamaConfig c;
  c.arch = f.get_string("general.architecture");
  // The GGUF converter permutes llama Q/K rows so RoPE pairs adjacent dims; qwen2 keeps the HF half-split layout.
  if (c.arch == "llama") {
    c.rope_pairing = RopePairing::Adjacent;
  } else if (c.arch == "qwen2") {
    c.rope_pairing = RopePairing::HalfSplit;
  } else {
    fail(f.path(), ": unknown architecture '", c.arch, "' (supported: llama, qwen2)");
  }
  const std::string a = c.arch + ".";
  c.n_layers = positive(f, a + "block_count", f.get_int(a + "block_count"));
  c.hidden = positive(f, a + "embedding_length", f.get_int(a + "embedding_length"));
  c.n_heads = positive(f, a + "attention.head_count", f.get_int(a + "attention.head_count"));
  c.n_kv_heads = positive(f, a + "attention.head_count_kv", f.get_int(a + "attention.head_count_kv", c.n_heads));
  c.ffn = positive(f, a + "feed_forward_length", f.get_int(a + "feed_forward_length"));
  c.context_length = positive(f, a + "context_length", f.get_int(a + "context_length"));
  c.norm_eps = (float)f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_theta = f.get_float(a + "rope.freq_base", 10000.0);
  // NaN compares false both ways: the positive forms below refuse it (a NaN model generated nothing, silently).
  KVF_CHECK(c.norm_eps >= 0 && std::isfinite(c.norm_eps), f.path(), ": metadata '", a,
            "attention.layer_norm_rms_epsilon' = ", c.norm_eps, " is not a finite number >= 0");
  KVF_CHECK(c.rope_theta > 0 && std::isfinite(c.rope_theta), f.path(), ": metadata '", a, "rope.freq_base' = ",
            c.rope_theta, " is not a finite positive number");
  KVF_CHECK(c.hidden % c.n_heads == 0, f.path(), ": embedding_length ", c.hidden, " is not a multiple of ",
            c.n_heads, " heads");
  c.head_dim = c.hidden / c.n_heads;
  if (f.has(a + "attention.key_length"))
    c.head_dim = positive(f, a + "attention.key_length", f.get_int(a + "attention.key_length"));
  KVF_CHECK(c.n_heads % c.n_kv_heads == 0, f.path(), ": ", c.n_heads, " heads are not a multiple of ",
            c.n_kv_heads, " kv heads");
  c.rotary_dim = positive(f, a + "rope.dimension_count", f.get_int(a + "rope.dimension_count", c.head_dim));
  KVF_CHECK(c.rotary_dim <= c.head_dim && c.rotary_dim % 2 == 0, f.path(), ": rope.dimension_count ",
            c.rotary_dim, " does not fit head dim ", c.head_dim);
  c.rope_scaling = f.get_string(a + "rope.scaling.type", "none");
  if (c.rope_scaling == "linear" || c.rope_scaling == "yarn") {
    c.rope_scaling_factor = f.get_float(a + "rope.scaling.factor", 1.0);
    KVF_CHECK(c.rope_scaling_factor > 0 && std::isfinite(c.rope_scaling_factor), f.path(), ": rope.scaling.factor ", c.rope_scaling_factor,
              " must be positive");
  } else {
    KVF_CHECK(c.rope_scaling == "none", f.path(), ": rope.scaling.type '", c.rope_scaling,
              "' is not supported (none, linear, yarn; llama3 comes as a rope_freqs tensor)");
  }
  // llama.cpp multiplies cos and sin by it whatever the kind (its yarn_attn_factor).
  c.rope_attn_factor = (float)f.get_float(a + "rope.scaling.attn_factor", 1.0);
  KVF_CHECK(c.rope_attn_factor > 0 && std::isfinite(c.rope_attn_factor), f.path(), ": rope.scaling.attn_factor ",
            c.rope_attn_factor, " must be positive");
  if (c.rope_scaling == "yarn") {
    c.rope_original_context = positive(f, a + "rope.scaling.original_context_length",
                                       f.get_int(a + "rope.scaling.original_context_length", c.context_length));
    KVF_CHECK(f.get_float(a + "rope.scaling.yarn_log_multiplier", 0.0) == 0.0, f.path(),
              ": rope.scaling.yarn_log_multiplier (DeepSeek's YaRN variant) is not supported");
  }
  if (f.has(a + "attention.sliding_window")) {
    const int64_t window = f.get_int(a + "attention.sliding_window");
    KVF_CHECK(window >= 0, f.path(), ": metadata '", a, "attention.sliding_window' = ", window, " is negative");
    // Attention is not masked by the window: capping the context keeps every query within it, where a windowed
    // and a full attention agree.
    if (window > 0 && window < c.context_length) {
      c.sliding_window = (int)window;
      c.context_length = (int)window;
    }
  }
  const int64_t vocab = f.has(a + "vocab_size") ? f.get_int(a + "vocab_size")
                                                 : (int64_t)f.get("tokenizer.ggml.tokens").array_size();
  c.vocab = positive(f, a + "vocab_size", vocab);
  read_condensed_kv(f, a, c);
  return c;
}

}  // namespace kvf
