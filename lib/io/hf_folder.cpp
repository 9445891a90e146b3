#include "io/hf_folder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/folder_path.h"
#include "io/hf_config.h"
#include "io/hf_tokenizer.h"
#include "core/json_file.h"
#include "io/safetensors.h"

namespace kvf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A shard the index names must be a file of the folder (core/folder_path.h).
void check_shard_name(const std::string& index, const std::string& tensor, const std::string& file) {
  const std::string problem = folder_path_problem(file);
  KVF_CHECK(problem.empty(), index, ": weight_map[\"", tensor, "\"] = \"", file, "\" ", problem,
            " (a shard is named by a path inside the model folder)");
}

constexpr uint64_t kMaxIndexBytes = 64u << 20;  // a 1000-shard model's index is a few hundred KB

// Every tensor name of the folder and the safetensors file that holds it.
class Shards {
 public:
  explicit Shards(const std::string& dir) {
    const std::string index = dir + "/model.safetensors.index.json", single = dir + "/model.safetensors";
    std::error_code ec;  // a name the system refuses (too long, a link loop) is a missing file, not an exception
    if (fs::exists(index, ec)) {
      const json j = read_json_file(index, kMaxIndexBytes);
      KVF_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), index,
                ": no \"weight_map\" object");
      std::map<std::string, std::shared_ptr<const safetensors::File>> files;
      for (const auto& [name, file] : j["weight_map"].items()) {
        KVF_CHECK(file.is_string(), index, ": weight_map[\"", name, "\"] = ", json_shown(file),
                  " is not a file name");
        check_shard_name(index, name, file.get<std::string>());
        const std::string shard = dir + "/" + file.get<std::string>();
        auto& f = files[shard];
        if (!f) {
          KVF_CHECK(fs::exists(shard, ec), index, ": shard \"", file.get<std::string>(), "\" (holding '", name,
                    "') ", ec ? "cannot be opened: " + ec.message() : std::string("does not exist"));
          f = safetensors::File::open(shard);
        }
        KVF_CHECK(f->find(name), index, ": tensor '", name, "' is not in its shard ", shard);
        where_[name] = f;
      }
    } else {
      KVF_CHECK(fs::exists(single, ec), dir, ": neither model.safetensors nor model.safetensors.index.json");
      const auto f = safetensors::File::open(single);
      for (const safetensors::TensorInfo& t : f->tensors()) where_[t.name] = f;
    }
  }
  // The file holding `name`, nullptr when no file does.
  const std::shared_ptr<const safetensors::File>* find(const std::string& name) const {
    auto it = where_.find(name);
    return it == where_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, std::shared_ptr<const safetensors::File>> where_;
};

GgmlType ggml_type_of(const safetensors::File& f, const safetensors::TensorInfo& t) {
  switch (t.dtype) {
    case safetensors::Dtype::F32:
      return GgmlType::F32;
    case safetensors::Dtype::F16:
      return GgmlType::F16;
    case safetensors::Dtype::BF16:
      return GgmlType::BF16;
    default:
      fail(f.path(), ": tensor '", t.name, "' has dtype ", safetensors::dtype_name(t.dtype),
           "; expected F32, F16 or BF16");
  }
}

// llama.cpp's converter reorders each head's rows of llama Q and K from [first halves | second halves] to
// interleaved pairs: new row 2i + j of a head is old row j * head_dim/2 + i.
std::shared_ptr<std::vector<uint8_t>> permute_rows(const uint8_t* src, int64_t heads, int64_t head_dim,
                                                   size_t row_bytes) {
  auto out = std::make_shared<std::vector<uint8_t>>((size_t)(heads * head_dim) * row_bytes);
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::memcpy(out->data() + (size_t)(h * head_dim + 2 * i + j) * row_bytes,
                    src + (size_t)(h * head_dim + j * half + i) * row_bytes, row_bytes);
  return out;
}

class Assembler {
 public:
  Assembler(const HfDecoderConfig& c, const Shards& shards, gguf::Parts& parts)
      : c_(c), shards_(shards), parts_(parts) {}

  // Adds HF tensor `hf` as GGUF tensor `name`, checking its shape ([rows, cols] or [rows]). permute_heads > 0:
  // llama Q/K rows reordered for that many heads. Returns false when an optional tensor is absent.
  bool add(const std::string& hf, const std::string& name, std::vector<int64_t> shape, bool required = true,
           int64_t permute_heads = 0) {
    const auto* file = shards_.find(hf);
    if (!file) {
      KVF_CHECK(!required, fs::path(c_.path).parent_path().string(), ": tensor '", hf,
                "' is missing from the safetensors files");
      return false;
    }
    const safetensors::File& f = **file;
    const safetensors::TensorInfo& t = f.tensor(hf);
    KVF_CHECK(t.shape == shape, f.path(), ": tensor '", hf, "' has shape ", dims(t.shape), ", expected ", dims(shape),
              " (", c_.path, ")");
    gguf::TensorInfo info;
    info.name = name;
    info.type = ggml_type_of(f, t);
    info.ne.assign(shape.rbegin(), shape.rend());
    info.n_elements = (uint64_t)t.numel();
    info.n_bytes = t.end - t.begin;
    const uint8_t* data = f.data(t);
    if (permute_heads > 0) {
      const auto permuted = permute_rows(data, permute_heads, c_.head_dim, info.n_bytes / (size_t)shape[0]);
      data = permuted->data();
      parts_.storage.push_back(permuted);
    }
    parts_.storage.push_back(*file);
    parts_.tensors.push_back(std::move(info));
    parts_.data.push_back(data);
    return true;
  }

 private:
  static std::string dims(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }
  const HfDecoderConfig& c_;
  const Shards& shards_;
  gguf::Parts& parts_;
};

// Runs `read`, turning a JSON value of an unexpected type (nlohmann's exception) into an error naming the files.
template <typename Read>
auto naming_json_errors(const std::string& files, Read&& read) {
  try {
    return read();
  } catch (const json::exception& e) {
    fail(files, ": unexpected JSON (", json_error_text(e), ")");
  }
}

}  // namespace

std::shared_ptr<const gguf::File> open_hf_folder(const std::string& dir) {
  const HfDecoderConfig c =
      naming_json_errors(dir + "/config.json", [&] { return read_hf_config(dir + "/config.json"); });
  gguf::Parts parts;
  parts.path = dir;
  add_hf_config_metadata(c, parts.metadata);
  naming_json_errors(dir + "/tokenizer.json or tokenizer_config.json",
                     [&] { add_hf_tokenizer_metadata(dir, c, parts.metadata); });

  const Shards shards = naming_json_errors(dir + "/model.safetensors.index.json", [&] { return Shards(dir); });
  Assembler a(c, shards, parts);
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const bool permute = c.arch == "llama";
  a.add("model.embed_tokens.weight", "token_embd.weight", {c.vocab, c.hidden});
  a.add("model.norm.weight", "output_norm.weight", {c.hidden});
  a.add("lm_head.weight", "output.weight", {c.vocab, c.hidden}, !c.tie_embeddings);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string hf = "model.layers." + std::to_string(l) + ".", p = "blk." + std::to_string(l) + ".";
    a.add(hf + "input_layernorm.weight", p + "attn_norm.weight", {c.hidden});
    a.add(hf + "self_attn.q_proj.weight", p + "attn_q.weight", {q_dim, c.hidden}, true, permute ? c.n_heads : 0);
    // An LCKV layer reading another layer's KV has no K/V projection.
    const bool computes_kv = c.kv_layers.empty() || c.kv_layers[(size_t)l] == l;
    a.add(hf + "self_attn.k_proj.weight", p + "attn_k.weight", {kv_dim, c.hidden}, computes_kv,
          permute ? c.n_kv_heads : 0);
    a.add(hf + "self_attn.v_proj.weight", p + "attn_v.weight", {kv_dim, c.hidden}, computes_kv);
    a.add(hf + "self_attn.o_proj.weight", p + "attn_output.weight", {c.hidden, q_dim});
    const bool biased = c.arch == "qwen2";  // qwen2 has Q/K/V biases; llama's attention_bias is optional
    a.add(hf + "self_attn.q_proj.bias", p + "attn_q.bias", {q_dim}, biased, permute ? c.n_heads : 0);
    a.add(hf + "self_attn.k_proj.bias", p + "attn_k.bias", {kv_dim}, biased && computes_kv,
          permute ? c.n_kv_heads : 0);
    a.add(hf + "self_attn.v_proj.bias", p + "attn_v.bias", {kv_dim}, biased && computes_kv);
    a.add(hf + "post_attention_layernorm.weight", p + "ffn_norm.weight", {c.hidden});
    a.add(hf + "mlp.gate_proj.weight", p + "ffn_gate.weight", {c.ffn, c.hidden});
    a.add(hf + "mlp.up_proj.weight", p + "ffn_up.weight", {c.ffn, c.hidden});
    a.add(hf + "mlp.down_proj.weight", p + "ffn_down.weight", {c.hidden, c.ffn});
  }
  if (c.rope_scaling == "llama3") {
    auto factors = std::make_shared<std::vector<float>>(llama3_rope_factors(c));
    gguf::TensorInfo info;
    info.name = "rope_freqs.weight";
    info.type = GgmlType::F32;
    info.ne = {(int64_t)factors->size()};
    info.n_elements = factors->size();
    info.n_bytes = factors->size() * sizeof(float);
    parts.tensors.push_back(info);
    parts.data.push_back(reinterpret_cast<const uint8_t*>(factors->data()));
    parts.storage.push_back(factors);
  }
  return gguf::File::assemble(std::move(parts));
}

std::shared_ptr<const gguf::File> open_decoder_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return gguf::File::open(path);
  KVF_CHECK(fs::exists(path + "/config.json", ec), path, ": a folder without config.json (a decoder is a GGUF file or ",
            "a Hugging Face folder)");
  return open_hf_folder(path);
}

}  // namespace kvf
