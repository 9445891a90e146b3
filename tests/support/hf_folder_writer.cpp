#include "support/hf_folder_writer.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"
#include "text/bpe_tokenizer.h"

namespace kvf::test {
namespace {

using nlohmann::json;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  KVF_CHECK(out.good(), path, ": cannot write");
}

std::string hf_name(const std::string& gguf_name) {
  static const std::map<std::string, std::string> top = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                         {"output_norm.weight", "model.norm.weight"},
                                                         {"output.weight", "lm_head.weight"}};
  static const std::map<std::string, std::string> layer = {{"attn_norm.weight", "input_layernorm.weight"},
                                                           {"attn_q.weight", "self_attn.q_proj.weight"},
                                                           {"attn_k.weight", "self_attn.k_proj.weight"},
                                                           {"attn_v.weight", "self_attn.v_proj.weight"},
                                                           {"attn_output.weight", "self_attn.o_proj.weight"},
                                                           {"attn_q.bias", "self_attn.q_proj.bias"},
                                                           {"attn_k.bias", "self_attn.k_proj.bias"},
                                                           {"attn_v.bias", "self_attn.v_proj.bias"},
                                                           {"ffn_norm.weight", "post_attention_layernorm.weight"},
                                                           {"ffn_gate.weight", "mlp.gate_proj.weight"},
                                                           {"ffn_up.weight", "mlp.up_proj.weight"},
                                                           {"ffn_down.weight", "mlp.down_proj.weight"}};
  if (top.count(gguf_name)) return top.at(gguf_name);
  const size_t dot = gguf_name.find('.', 4);  // "blk.N.rest"
  return "model.layers." + gguf_name.substr(4, dot - 4) + "." + layer.at(gguf_name.substr(dot + 1));
}

const char* dtype_of(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return "F32";
    case GgmlType::F16:
      return "F16";
    case GgmlType::BF16:
      return "BF16";
    default:
      fail("write_hf_folder: tensor type ", ggml_type_name(t), " has no safetensors dtype");
  }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors) {
  json header = {{"__metadata__", {{"format", "pt"}}}};
  size_t offset = 0;
  for (const SafetensorsEntry& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8, ' ');
  const uint64_t n = h.size();
  std::string file(reinterpret_cast<const char*>(&n), 8);
  file += h;
  for (const SafetensorsEntry& t : tensors) file += t.bytes;
  write_text(path, file);
}

void write_hf_folder(const std::string& gguf_path, const std::string& dir, const HfFolderSpec& spec) {
  std::filesystem::create_directories(dir);
  const auto f = gguf::File::open(gguf_path);
  const std::string arch = f->get_string("general.architecture"), a = arch + ".";
  const int64_t hidden = f->get_int(a + "embedding_length"), heads = f->get_int(a + "attention.head_count");
  const int64_t kv_heads = f->get_int(a + "attention.head_count_kv"), vocab = f->get_int(a + "vocab_size");
  const int64_t head_dim = hidden / heads;
  json config = {{"model_type", arch},
                 {"hidden_size", hidden},
                 {"intermediate_size", f->get_int(a + "feed_forward_length")},
                 {"num_hidden_layers", f->get_int(a + "block_count")},
                 {"num_attention_heads", heads},
                 {"num_key_value_heads", kv_heads},
                 {"max_position_embeddings", f->get_int(a + "context_length")},
                 {"rms_norm_eps", f->get_float(a + "attention.layer_norm_rms_epsilon")},
                 {"rope_theta", f->get_float(a + "rope.freq_base")},
                 {"vocab_size", vocab},
                 {"tie_word_embeddings", f->find_tensor("output.weight") == nullptr}};
  if (f->has(a + "lckv.kv_layers")) {  // the LCKV release's config: layer_types "0_4_4_..._5", m and b passes
    std::string types;
    for (int64_t src : f->get_int_array(a + "lckv.kv_layers")) types += (types.empty() ? "" : "_") + std::to_string(src);
    const int64_t passes = f->get_int(a + "lckv.prompt_iterations");
    config["model_type"] = "lckv-llama";
    config["architectures"] = {"LCKVLlamaForCausalLM"};
    config["layer_types"] = types;
    config["forward_passes"] = passes - 2;
    config["backward_passes"] = 2;
    config["force_nodiag"] = f->get_bool(a + "lckv.mask_every_diagonal");
  }
  write_text(dir + "/config.json", config.dump(2));

  std::vector<SafetensorsEntry> entries;
  for (const gguf::TensorInfo& t : f->tensors()) {
    SafetensorsEntry e{hf_name(t.name), dtype_of(t.type), std::vector<int64_t>(t.ne.rbegin(), t.ne.rend()),
                       std::string(reinterpret_cast<const char*>(f->tensor_data(t)), t.n_bytes)};
    const bool q = t.name.find("attn_q.") != std::string::npos, k = t.name.find("attn_k.") != std::string::npos;
    if (arch == "llama" && (q || k)) {  // GGUF row 2i + j of a head is Hugging Face row j * head_dim/2 + i
      const size_t row = t.n_bytes / (size_t)e.shape[0];
      const int64_t half = head_dim / 2;
      for (int64_t h = 0; h < (q ? heads : kv_heads); ++h)
        for (int64_t i = 0; i < half; ++i)
          for (int64_t j = 0; j < 2; ++j)
            std::memcpy(e.bytes.data() + (size_t)(h * head_dim + j * half + i) * row,
                        f->tensor_data(t) + (size_t)(h * head_dim + 2 * i + j) * row, row);
    }
    entries.push_back(std::move(e));
  }
  if (spec.shards == 1) {
    write_safetensors(dir + "/model.safetensors", entries);
  } else {
    json weight_map = json::object();
    const size_t per = (entries.size() + spec.shards - 1) / spec.shards;
    for (int s = 0; s < spec.shards; ++s) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, spec.shards);
      std::vector<SafetensorsEntry> part(entries.begin() + std::min(entries.size(), s * per),
                                         entries.begin() + std::min(entries.size(), (s + 1) * per));
      for (const SafetensorsEntry& e : part) weight_map[e.name] = name;
      write_safetensors(dir + "/" + name, part);
    }
    write_text(dir + "/model.safetensors.index.json",
               json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(2));
  }

  json vocab_json = json::object();
  for (int64_t i = 0; i < vocab; ++i) vocab_json[i < 256 ? byte_level_char((uint8_t)i) : "tok" + std::to_string(i)] = i;
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}};
  const json tokenizer = {
      {"version", "1.0"},      {"added_tokens", json::array()},
      {"normalizer", nullptr}, {"pre_tokenizer", byte_level},
      {"decoder", byte_level}, {"model", {{"type", "BPE"}, {"vocab", vocab_json}, {"merges", json::array()}}}};
  write_text(dir + "/tokenizer.json", tokenizer.dump());
  write_text(dir + "/tokenizer_config.json", json{{"chat_template", "{{ '<|im_start|>' }}"}}.dump());
}

}  // namespace kvf::test
