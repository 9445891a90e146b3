#include "io/random_model.h"

#include <tbb/parallel_for.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace kvf {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// n values of mean `offset` and standard deviation `scale` into v (its memory reused from tensor to tensor: fresh
// pages for every tensor of a 7B model cost more than drawing the values), element i drawn from hash(stream, i):
// the sum of four 16-bit uniforms, standardised (Irwin-Hall), close enough to normal for weights and cheap enough
// for billions.
void random_values(std::vector<float>& v, uint64_t stream, size_t n, float scale, float offset = 0.0f) {
  v.resize(n);
  const uint64_t key = splitmix64(stream);
  constexpr size_t kBlock = size_t{1} << 16;
  tbb::parallel_for(size_t{0}, (n + kBlock - 1) / kBlock, [&](size_t b) {
    for (size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) {
      const uint64_t h = splitmix64(key ^ (i * 0xD1B54A32D192ED03ull));
      const float sum = (float)((h & 0xFFFF) + (h >> 16 & 0xFFFF) + (h >> 32 & 0xFFFF) + (h >> 48) + 2) / 65536.0f;
      v[i] = offset + scale * (sum - 2.0f) * 1.7320508f;  // sum has mean 2 and variance 1/3
    }
  });
}

}  // namespace

std::vector<float> llama3_rope_freq_factors(int head_dim, double theta, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context) {
  // llama.cpp's convert_hf_to_gguf.py (LlamaModel.generate_extra_tensors): frequencies with wavelengths shorter
  // than original_context / high_freq_factor keep theirs, longer than original_context / low_freq_factor are
  // divided by factor, and those between are interpolated smoothly.
  const double low_wavelen = original_context / low_freq_factor, high_wavelen = original_context / high_freq_factor;
  std::vector<float> factors;
  for (int i = 0; i < head_dim; i += 2) {
    const float freq = (float)(1.0 / std::pow(theta, (double)i / head_dim));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back((float)factor);
    } else {
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      factors.push_back((float)(1.0 / ((1 - smooth) / factor + smooth)));
    }
  }
  return factors;
}

std::vector<std::string> real_model_shape_names() {
  return {"smollm2-135m", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-7b", "mistral-7b-v0.2", "llama-3.1-8b"};
}

RandomModelSpec real_model_shape(const std::string& name) {
  RandomModelSpec s;
  // Shapes as the models' GGUF metadata gives them (block_count, embedding_length, heads, feed_forward_length,
  // vocabulary rows of token_embd, rope.freq_base).
  if (name == "smollm2-135m") {
    s.arch = "llama", s.n_layers = 30, s.hidden = 576, s.n_heads = 9, s.n_kv_heads = 3, s.ffn = 1536;
    s.vocab = 49152, s.context = 8192, s.rope_theta = 100000.0f;
  } else if (name == "qwen2.5-0.5b") {
    s.arch = "qwen2", s.n_layers = 24, s.hidden = 896, s.n_heads = 14, s.n_kv_heads = 2, s.ffn = 4864;
    s.vocab = 151936, s.context = 32768, s.rope_theta = 1000000.0f;
  } else if (name == "qwen2.5-1.5b") {
    s.arch = "qwen2", s.n_layers = 28, s.hidden = 1536, s.n_heads = 12, s.n_kv_heads = 2, s.ffn = 8960;
    s.vocab = 151936, s.context = 32768, s.rope_theta = 1000000.0f;
  } else if (name == "qwen2.5-7b") {
    s.arch = "qwen2", s.n_layers = 28, s.hidden = 3584, s.n_heads = 28, s.n_kv_heads = 4, s.ffn = 18944;
    s.vocab = 152064, s.context = 32768, s.rope_theta = 1000000.0f, s.tied_output = false;
  } else if (name == "mistral-7b-v0.2") {  // sliding_window null in v0.2: none
    s.arch = "llama", s.n_layers = 32, s.hidden = 4096, s.n_heads = 32, s.n_kv_heads = 8, s.ffn = 14336;
    s.vocab = 32000, s.context = 32768, s.rope_theta = 1000000.0f, s.tied_output = false;
  } else if (name == "llama-3.1-8b") {
    s.arch = "llama", s.n_layers = 32, s.hidden = 4096, s.n_heads = 32, s.n_kv_heads = 8, s.ffn = 14336;
    s.vocab = 128256, s.context = 131072, s.rope_theta = 500000.0f, s.tied_output = false;
    s.rope_freq_factors = llama3_rope_freq_factors(128, 500000.0, 8.0, 1.0, 4.0, 8192.0);
  } else {
    std::string names;
    for (const std::string& n : real_model_shape_names()) names += (names.empty() ? "" : ", ") + n;
    fail("random model: no shape named '", name, "'; known shapes: ", names);
  }
  if (s.arch == "qwen2") s.rms_eps = 1e-6f;
  s.matrix_type = GgmlType::BF16;
  return s;
}

void write_random_model(const RandomModelSpec& spec, const std::string& path) {
  RandomModelSpec s = spec;
  KVF_CHECK(s.n_layers >= 1 && s.hidden >= 1 && s.n_heads >= 1 && s.n_kv_heads >= 1 && s.ffn >= 1,
            "random model: layers, hidden, heads, kv heads and ffn must be positive");
  KVF_CHECK(s.hidden % s.n_heads == 0 && s.n_heads % s.n_kv_heads == 0, "random model: hidden ", s.hidden,
            " must split into ", s.n_heads, " heads, and the heads into ", s.n_kv_heads, " kv heads");
  gguf::Writer w;
  if (!s.tokenizer_from.empty()) {
    const auto source = gguf::File::open(s.tokenizer_from);
    for (const auto& [key, value] : source->metadata())
      if (key.rfind("tokenizer.", 0) == 0 && !(key == "tokenizer.chat_template" && !s.chat_template.empty()))
        w.add_value(key, value);
    s.vocab = (int)source->get("tokenizer.ggml.tokens").array_size();
  }
  if (!s.chat_template.empty()) w.add_string("tokenizer.chat_template", s.chat_template);
  if (s.placeholder_vocab && s.tokenizer_from.empty()) {
    KVF_CHECK(s.vocab >= 259, "random model: a placeholder vocabulary needs at least 259 tokens, not ", s.vocab);
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};  // llama.cpp's token types: unknown, control, normal 1, byte 6
    char hex[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(hex, sizeof hex, "<0x%02X>", b);
      tokens.push_back(hex);
      types.push_back(6);
    }
    while ((int)tokens.size() < s.vocab) {
      tokens.push_back("t" + std::to_string(tokens.size()));
      types.push_back(1);
    }
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_f32_array("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
    w.add_i32_array("tokenizer.ggml.token_type", types);
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
    w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  }
  const std::string a = s.arch + ".";
  w.add_string("general.architecture", s.arch);
  w.add_u32(a + "block_count", s.n_layers);
  w.add_u32(a + "embedding_length", s.hidden);
  w.add_u32(a + "attention.head_count", s.n_heads);
  w.add_u32(a + "attention.head_count_kv", s.n_kv_heads);
  w.add_u32(a + "feed_forward_length", s.ffn);
  w.add_u32(a + "context_length", s.context);
  w.add_u32(a + "vocab_size", s.vocab);
  w.add_f32(a + "rope.freq_base", s.rope_theta);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  if (s.sliding_window > 0) w.add_u32(a + "attention.sliding_window", (uint32_t)s.sliding_window);
  if (s.rope_scaling != "none") {
    KVF_CHECK(s.rope_scaling == "linear" || s.rope_scaling == "yarn", "random model: rope scaling '", s.rope_scaling,
              "' (none, linear, yarn)");
    w.add_string(a + "rope.scaling.type", s.rope_scaling);
    w.add_f32(a + "rope.scaling.factor", s.rope_scaling_factor);
    if (s.rope_scaling == "yarn" && s.rope_original_context > 0)
      w.add_u32(a + "rope.scaling.original_context_length", (uint32_t)s.rope_original_context);
  }
  if (!s.lckv_kv_layers.empty()) {
    w.add_i32_array(a + "lckv.kv_layers", s.lckv_kv_layers);
    w.add_u32(a + "lckv.prompt_iterations", (uint32_t)s.lckv_prompt_iterations);
    w.add_bool(a + "lckv.mask_every_diagonal", s.lckv_mask_every_diagonal);
  }

  uint64_t stream = (uint64_t)s.seed << 32;  // one stream per tensor, in the order they are written
  const int64_t hd = s.hidden / s.n_heads, q_dim = s.n_heads * hd, kv_dim = s.n_kv_heads * hd;
  std::vector<float> values;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    random_values(values, stream++, (size_t)(rows * cols), 1.0f / std::sqrt((float)cols) * 1.5f);
    w.add_tensor_f32(name, {cols, rows}, values.data(), s.matrix_type);
  };
  auto vector = [&](const std::string& name, int64_t n, float scale, float offset) {
    random_values(values, stream++, (size_t)n, scale, offset);
    w.add_tensor_f32(name, {n}, values.data(), GgmlType::F32);
  };
  if (!s.rope_freq_factors.empty()) {
    KVF_CHECK((int)s.rope_freq_factors.size() * 2 * s.n_heads == s.hidden, "random model: ",
              s.rope_freq_factors.size(), " rope_freqs factors for head dim ", s.hidden / s.n_heads);
    w.add_tensor_f32("rope_freqs.weight", {(int64_t)s.rope_freq_factors.size()}, s.rope_freq_factors.data(),
                     GgmlType::F32);
  }
  random_values(values, stream++, (size_t)s.vocab * s.hidden, 1.0f);
  w.add_tensor_f32("token_embd.weight", {s.hidden, s.vocab}, values.data(), s.matrix_type);
  vector("output_norm.weight", s.hidden, 0.1f, 1.0f);
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    vector(p + "attn_norm.weight", s.hidden, 0.1f, 1.0f);
    matrix(p + "attn_q.weight", q_dim, s.hidden);
    const bool computes_kv = s.lckv_kv_layers.empty() || s.lckv_kv_layers[(size_t)l] == l;
    if (computes_kv) {
      matrix(p + "attn_k.weight", kv_dim, s.hidden);
      matrix(p + "attn_v.weight", kv_dim, s.hidden);
    }
    if (s.arch == "qwen2") {
      vector(p + "attn_q.bias", q_dim, 0.2f, 0.0f);
      if (computes_kv) {
        vector(p + "attn_k.bias", kv_dim, 0.2f, 0.0f);
        vector(p + "attn_v.bias", kv_dim, 0.2f, 0.0f);
      }
    }
    matrix(p + "attn_output.weight", s.hidden, q_dim);
    vector(p + "ffn_norm.weight", s.hidden, 0.1f, 1.0f);
    matrix(p + "ffn_gate.weight", s.ffn, s.hidden);
    matrix(p + "ffn_up.weight", s.ffn, s.hidden);
    matrix(p + "ffn_down.weight", s.hidden, s.ffn);
  }
  if (!s.tied_output) matrix("output.weight", s.vocab, s.hidden);  // after the layers: tied files stay as they were
  w.write(path);
}

void write_tokenizer_only(const std::string& source, const std::string& path) {
  const auto file = gguf::File::open(source);
  gguf::Writer w;
  size_t keys = 0;
  for (const auto& [key, value] : file->metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.add_value(key, value), ++keys;
  KVF_CHECK(keys > 0, source, ": no tokenizer.* metadata to copy");
  w.write(path);
}

}  // namespace kvf
