#include "support/tiny_model.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace kvf::test {
namespace {

std::vector<float> random_values(std::mt19937& rng, size_t n, float scale, float offset = 0.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = offset + dist(rng);
  return v;
}

}  // namespace

std::string write_tiny_model(const TinyModelSpec& spec) {
  TinyModelSpec s = spec;
  gguf::Writer w;
  if (!s.tokenizer_from.empty()) {
    const auto source = gguf::File::open(s.tokenizer_from);
    for (const auto& [key, value] : source->metadata())
      if (key.rfind("tokenizer.", 0) == 0) w.add_value(key, value);
    s.vocab = (int)source->get("tokenizer.ggml.tokens").array_size();
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
  w.add_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!s.lckv_kv_layers.empty()) {
    w.add_i32_array(a + "lckv.kv_layers", s.lckv_kv_layers);
    w.add_u32(a + "lckv.prompt_iterations", (uint32_t)s.lckv_prompt_iterations);
    w.add_bool(a + "lckv.mask_every_diagonal", s.lckv_mask_every_diagonal);
  }

  std::mt19937 rng(s.seed);
  const int64_t hd = s.hidden / s.n_heads, q_dim = s.n_heads * hd, kv_dim = s.n_kv_heads * hd;
  // Scales chosen so activations stay O(1) and attention is neither uniform nor one-hot.
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const auto v = random_values(rng, (size_t)(rows * cols), 1.0f / std::sqrt((float)cols) * 1.5f);
    w.add_tensor_f32(name, {cols, rows}, v.data(), s.matrix_type);
  };
  auto vector = [&](const std::string& name, int64_t n, float scale, float offset) {
    const auto v = random_values(rng, (size_t)n, scale, offset);
    w.add_tensor_f32(name, {n}, v.data(), GgmlType::F32);
  };
  const auto embd = random_values(rng, (size_t)s.vocab * s.hidden, 1.0f);
  w.add_tensor_f32("token_embd.weight", {s.hidden, s.vocab}, embd.data(), s.matrix_type);
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
  const auto dir = std::filesystem::temp_directory_path() / "kvfuse-tests";
  std::filesystem::create_directories(dir);
  static std::atomic<int> written{0};  // two specs in one process never share a file
  const std::string path = (dir / (s.arch + (s.lckv_kv_layers.empty() ? "" : "-lckv") + "-" +
                                   std::to_string(s.seed) + "-" + std::to_string(s.n_layers) + "x" +
                                   std::to_string(s.hidden) + "-" + ggml_type_name(s.matrix_type) + "-" +
                                   std::to_string(::getpid()) + "-" + std::to_string(written++) + ".gguf"))
                               .string();
  w.write(path);
  return path;
}

}  // namespace kvf::test
