#include "model/llama_weights.h"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "core/ggml_types.h"
#include "core/half.h"
#include "io/gguf.h"

namespace kvf {
namespace {

// Dequantizes a GGUF tensor to f32 host memory, blocks of rows in parallel.
std::vector<float> dequantize_tensor(const gguf::File& f, const gguf::TensorInfo& info) {
  const int64_t row = info.ne.at(0), rows = info.rows();
  std::vector<float> out((size_t)(row * rows));
  constexpr int64_t kRowsPerTask = 64;
  tbb::parallel_for(int64_t{0}, (rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t b) {
    const int64_t first = b * kRowsPerTask;
    f.dequantize_rows(info, first, std::min(kRowsPerTask, rows - first), out.data() + first * row);
  });
  return out;
}

class Loader {
 public:
  Loader(const gguf::File& f, Backend& b, ComputeMode mode) : f_(f), b_(b), mode_(mode) {}

  // shape is [rows, row_length] (row-major) or [n] for vectors.
  Tensor load(const std::string& name, const Shape& shape) const {
    const gguf::TensorInfo& info = checked(name, shape);
    const std::vector<float> host = dequantize_tensor(f_, info);
    Tensor t = b_.empty(DType::F32, shape);
    b_.copy_from_host(t, host.data(), host.size() * sizeof(float));
    return t;
  }

  // A matmul weight or embedding table [rows, row_length]: compact in the fast mode (see llama_weights.h). A weight
  // only matmuls read goes to the backend as Backend::matmul_weight, which lays it out for them.
  Tensor load_matrix(const std::string& name, const Shape& shape, bool matmul_only = false) const {
    const gguf::TensorInfo& info = checked(name, shape);
    DType stored = DType::F32;
    if (mode_ == ComputeMode::F32 || !dtype_of_ggml(info.type, &stored)) return load(name, shape);
    DType keep = stored == DType::F32 || stored == DType::F16 ? DType::BF16 : stored;
    // A block format the backend cannot multiply (the GPU's) becomes bf16 rather than f32: half the memory.
    if (!b_.accepts_weights(keep, shape.back()) && b_.accepts_weights(DType::BF16, shape.back())) keep = DType::BF16;
    if (!b_.accepts_weights(keep, shape.back())) return load(name, shape);
    const auto upload = [&](const void* bytes) {
      if (matmul_only) return b_.matmul_weight(keep, shape, bytes);
      Tensor t = b_.empty(keep, shape);
      b_.copy_from_host(t, bytes, t.nbytes());
      return t;
    };
    if (keep == stored) return upload(f_.tensor_data(info));
    const std::vector<float> host = dequantize_tensor(f_, info);
    std::vector<uint16_t> bf16(host.size());
    for (size_t i = 0; i < host.size(); ++i) bf16[i] = f32_to_bf16(host[i]);
    return upload(bf16.data());
  }

  Tensor load_matmul_weight(const std::string& name, const Shape& shape) const {
    return load_matrix(name, shape, true);
  }

  Tensor load_optional(const std::string& name, const Shape& shape) const {
    return f_.find_tensor(name) ? load(name, shape) : Tensor{};
  }

 private:
  const gguf::TensorInfo& checked(const std::string& name, const Shape& shape) const {
    const gguf::TensorInfo& info = f_.tensor(name);
    Shape ggml_shape(shape.rbegin(), shape.rend());
    std::vector<int64_t> ne = info.ne;
    while (ne.size() > ggml_shape.size() && ne.back() == 1) ne.pop_back();
    KVF_CHECK(ne == ggml_shape, f_.path(), ": tensor '", name, "' has shape ", shape_str(info.ne),
              " (ggml order), expected ", shape_str(ggml_shape));
    return info;
  }

  const gguf::File& f_;
  Backend& b_;
  ComputeMode mode_;
};

}  // namespace

const char* compute_mode_name(ComputeMode mode) { return mode == ComputeMode::Fast ? "fast" : "f32"; }

ComputeMode compute_mode_from_name(const std::string& name) {
  if (name == "fast") return ComputeMode::Fast;
  if (name == "f32") return ComputeMode::F32;
  fail("compute mode '", name, "': expected fast or f32");
}

LlamaWeights load_llama_weights(const gguf::File& f, const LlamaConfig& c, Backend& backend, ComputeMode mode) {
  const Loader ld(f, backend, mode);
  const int64_t q_dim = (int64_t)c.n_heads * c.head_dim, kv_dim = (int64_t)c.n_kv_heads * c.head_dim;
  LlamaWeights w;
  w.token_embd = ld.load_matrix("token_embd.weight", {c.vocab, c.hidden});
  w.output_norm = ld.load("output_norm.weight", {c.hidden});
  // Tied to the embedding table (no output.weight), the output matrix stays in the table's layout.
  w.output = f.find_tensor("output.weight") ? ld.load_matmul_weight("output.weight", {c.vocab, c.hidden})
                                            : w.token_embd;
  if (const gguf::TensorInfo* rf = f.find_tensor("rope_freqs.weight")) w.rope_freq_factors = dequantize_tensor(f, *rf);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayerWeights L;
    L.attn_norm = ld.load(p + "attn_norm.weight", {c.hidden});
    L.wq = ld.load_matmul_weight(p + "attn_q.weight", {q_dim, c.hidden});
    // A condensed-KV layer that reads another layer's KV has no K/V projection.
    const bool computes_kv = c.condensed.source(l) == l;
    if (computes_kv) {
      L.wk = ld.load_matmul_weight(p + "attn_k.weight", {kv_dim, c.hidden});
      L.wv = ld.load_matmul_weight(p + "attn_v.weight", {kv_dim, c.hidden});
    }
    L.wo = ld.load_matmul_weight(p + "attn_output.weight", {c.hidden, q_dim});
    L.bq = ld.load_optional(p + "attn_q.bias", {q_dim});
    if (computes_kv) {
      L.bk = ld.load_optional(p + "attn_k.bias", {kv_dim});
      L.bv = ld.load_optional(p + "attn_v.bias", {kv_dim});
    }
    L.ffn_norm = ld.load(p + "ffn_norm.weight", {c.hidden});
    L.w_gate = ld.load_matmul_weight(p + "ffn_gate.weight", {c.ffn, c.hidden});
    L.w_up = ld.load_matmul_weight(p + "ffn_up.weight", {c.ffn, c.hidden});
    L.w_down = ld.load_matmul_weight(p + "ffn_down.weight", {c.hidden, c.ffn});
    w.layers.push_back(std::move(L));
  }
  return w;
}

}  // namespace kvf
