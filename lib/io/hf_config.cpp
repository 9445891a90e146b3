#include "io/hf_config.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"

namespace kvf {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 16u << 20;  // a config.json is a few KB
constexpr int64_t kMaxVocab = 1 << 22;           // the largest real vocabularies are about 256k

class Fields {
 public:
  Fields(const std::string& path, const json& j) : path_(path), j_(j) {}

  int64_t count(const char* key) const {
    KVF_CHECK(j_.contains(key) && !j_[key].is_null(), path_, ": missing \"", key, "\"");
    return count(key, 0);
  }
  int64_t count(const char* key, int64_t dflt) const {
    if (!j_.contains(key) || j_[key].is_null()) return dflt;
    return positive_integer(j_, "", key);
  }
  // A count below 2^31 (what GGUF's 32-bit fields and kvfuse's int32 token ids hold).
  int64_t positive_integer(const json& obj, const std::string& where, const char* key) const {
    const json& v = obj[key];
    KVF_CHECK(v.is_number_integer() && v.get<int64_t>() > 0 && v.get<int64_t>() < (1LL << 31), path_, ": ", where,
              key, " = ", json_shown(v), " is not a positive integer below 2^31");
    return v.get<int64_t>();
  }
  // Stored as a GGUF f32, so it must stay finite as a float too.
  double positive(const json& obj, const std::string& where, const char* key, double dflt) const {
    if (!obj.contains(key) || obj[key].is_null()) return dflt;
    const json& v = obj[key];
    KVF_CHECK(v.is_number() && v.get<double>() > 0 && v.get<double>() <= FLT_MAX, path_, ": ", where, key, " = ",
              json_shown(v), " is not a finite positive number");
    return v.get<double>();
  }
  double positive(const char* key, double dflt) const { return positive(j_, "", key, dflt); }
  // An id or a list of ids (Llama 3's eos_token_id), each checked against the vocabulary; the first, or -1 when
  // absent. Only the first is used, but an id past the vocabulary is a broken file wherever it stands.
  int64_t token_id(const char* key, int64_t vocab) const {
    if (!j_.contains(key) || j_[key].is_null()) return -1;
    const json& v = j_[key];
    const json ids = v.is_array() ? v : json::array({v});
    KVF_CHECK(!ids.empty(), path_, ": ", key, " = [] names no token");
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string at = v.is_array() ? "[" + std::to_string(i) + "]" : "";
      KVF_CHECK(ids[i].is_number_integer() && ids[i].get<int64_t>() >= 0, path_, ": ", key, at, " = ",
                json_shown(ids[i]), " is not a token id");
      KVF_CHECK(ids[i].get<int64_t>() < vocab, path_, ": ", key, at, " = ", ids[i].get<int64_t>(),
                " is outside vocab_size ", vocab);
    }
    return ids[0].get<int64_t>();
  }

 private:
  const std::string& path_;
  const json& j_;
};

void read_rope_scaling(const json& rs, HfDecoderConfig& c, const Fields& f) {
  if (rs.is_null()) return;
  KVF_CHECK(rs.is_object(), c.path, ": rope_scaling = ", json_shown(rs), " is not an object");
  const char* type_key = rs.contains("rope_type") ? "rope_type" : "type";
  KVF_CHECK(rs.contains(type_key) && rs[type_key].is_string(), c.path, ": rope_scaling.", type_key, " = ",
            rs.contains(type_key) ? json_shown(rs[type_key]) : "(missing)", " is not a string");
  const std::string type = rs[type_key].get<std::string>();
  if (type == "default") return;
  KVF_CHECK(type == "linear" || type == "llama3" || type == "yarn", c.path, ": rope_scaling.", type_key, " \"", type,
            "\" is not supported (none, default, linear, llama3, yarn)");
  c.rope_scaling = type;
  KVF_CHECK(rs.contains("factor"), c.path, ": rope_scaling has no \"factor\"");
  c.rope_factor = f.positive(rs, "rope_scaling.", "factor", 1.0);
  if (type == "llama3") {
    c.low_freq_factor = f.positive(rs, "rope_scaling.", "low_freq_factor", 1.0);
    c.high_freq_factor = f.positive(rs, "rope_scaling.", "high_freq_factor", 4.0);
    if (rs.contains("original_max_position_embeddings") && !rs["original_max_position_embeddings"].is_null())
      c.original_context = f.positive_integer(rs, "rope_scaling.", "original_max_position_embeddings");
    KVF_CHECK(c.high_freq_factor > c.low_freq_factor, c.path, ": rope_scaling.high_freq_factor ", c.high_freq_factor,
              " must exceed low_freq_factor ", c.low_freq_factor);
  }
  if (type == "yarn") {
    // What GGUF carries of yarn (llama.cpp's converter writes factor and original_context_length); llama.cpp takes
    // beta_fast 32, beta_slow 1 and the magnitude 0.1 ln(factor) + 1 itself, as transformers does by default.
    c.original_context = 0;
    if (rs.contains("original_max_position_embeddings") && !rs["original_max_position_embeddings"].is_null())
      c.original_context = f.positive_integer(rs, "rope_scaling.", "original_max_position_embeddings");
    KVF_CHECK(f.positive(rs, "rope_scaling.", "beta_fast", 32.0) == 32.0 &&
                  f.positive(rs, "rope_scaling.", "beta_slow", 1.0) == 1.0,
              c.path, ": rope_scaling.beta_fast / beta_slow other than 32 / 1 are not supported (llama.cpp's yarn)");
    for (const char* key : {"attention_factor", "mscale", "mscale_all_dim"})
      KVF_CHECK(!rs.contains(key) || rs[key].is_null(), c.path, ": rope_scaling.", key,
                " is not supported (yarn's magnitude is 0.1 ln(factor) + 1, as llama.cpp computes it)");
  }
}

bool read_bool(const json& j, const std::string& path, const char* key, bool dflt) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  KVF_CHECK(j[key].is_boolean(), path, ": ", key, " = ", json_shown(j[key]), " is not true or false");
  return j[key].get<bool>();
}

// The LCKV release's keys: layer_types "i_j_k..." (one layer index per layer; an "s" suffix asks for sliding-window
// attention, which kvfuse does not run), forward_passes, backward_passes, use_sequential, force_nodiag.
void read_lckv(const json& j, HfDecoderConfig& c, const Fields& f) {
  std::string types;
  if (j.contains("layer_types") && !j["layer_types"].is_null()) {
    KVF_CHECK(j["layer_types"].is_string(), c.path, ": layer_types = ", json_shown(j["layer_types"]),
              " is not a string");
    types = j["layer_types"].get<std::string>();
  }
  for (size_t at = 0; !types.empty() && at <= types.size();) {
    const size_t end = std::min(types.find('_', at), types.size());
    const std::string item = types.substr(at, end - at);
    KVF_CHECK(item.find('s') == std::string::npos, c.path, ": layer_types entry ", c.kv_layers.size(), " \"", item,
              "\" asks for sliding-window attention, which kvfuse does not run");
    KVF_CHECK(!item.empty() && item.size() < 10 && item.find_first_not_of("0123456789") == std::string::npos, c.path,
              ": layer_types entry ", c.kv_layers.size(), " \"", item, "\" is not a layer index (\"", types, "\")");
    c.kv_layers.push_back(std::stoll(item));
    at = end + 1;
  }
  if (c.kv_layers.empty())
    for (int64_t l = 0; l < c.n_layers; ++l) c.kv_layers.push_back(l);  // the release's default: each its own
  KVF_CHECK((int64_t)c.kv_layers.size() == c.n_layers, c.path, ": layer_types has ", c.kv_layers.size(),
            " entries for ", c.n_layers, " layers");
  for (size_t l = 0; l < c.kv_layers.size(); ++l) {
    const int64_t src = c.kv_layers[l];
    KVF_CHECK(src < c.n_layers, c.path, ": layer_types entry ", l, " names layer ", src, " of ", c.n_layers);
    KVF_CHECK(c.kv_layers[(size_t)src] == src, c.path, ": layer_types: layer ", l, " reads layer ", src,
              ", which reads layer ", c.kv_layers[(size_t)src], " (a layer read must read itself)");
  }
  const int64_t passes = f.count("forward_passes", 7) + f.count("backward_passes", 2);
  c.prompt_iterations = read_bool(j, c.path, "use_sequential", false) ? 0 : passes;
  c.mask_every_diagonal = read_bool(j, c.path, "force_nodiag", false);
}

}  // namespace

HfDecoderConfig read_hf_config(const std::string& path) {
  const json j = read_json_file(path, kMaxConfigBytes);
  KVF_CHECK(j.is_object(), path, ": not a JSON object");
  HfDecoderConfig c;
  c.path = path;
  KVF_CHECK(j.contains("model_type") && !j["model_type"].is_null(), path, ": missing \"model_type\"");
  KVF_CHECK(j["model_type"].is_string(), path, ": model_type = ", json_shown(j["model_type"]), " is not a string");
  c.model_type = j["model_type"].get<std::string>();
  if (c.model_type == "llama" || c.model_type == "mistral" || c.model_type == "lckv-llama") {
    c.arch = "llama";
  } else if (c.model_type == "qwen2") {
    c.arch = "qwen2";
  } else {
    fail(path, ": model_type \"", c.model_type, "\" is not supported (llama, mistral, qwen2, lckv-llama)");
  }
  const Fields f(path, j);
  c.n_layers = f.count("num_hidden_layers");
  c.hidden = f.count("hidden_size");
  c.n_heads = f.count("num_attention_heads");
  c.n_kv_heads = f.count("num_key_value_heads", c.n_heads);
  c.ffn = f.count("intermediate_size");
  c.vocab = f.count("vocab_size");
  // Every id gets a token text in memory before any weight is read: a vocabulary no model has is refused here.
  KVF_CHECK(c.vocab <= kMaxVocab, path, ": vocab_size = ", c.vocab, " is above the largest vocabulary kvfuse reads (",
            kMaxVocab, ")");
  c.context_length = f.count("max_position_embeddings", 2048);
  // Mistral's sliding window is not applied: within the window, attention is the same as without it.
  if (c.model_type == "mistral")
    c.context_length = std::min(c.context_length, f.count("sliding_window", c.context_length));
  KVF_CHECK(c.hidden % c.n_heads == 0 || j.contains("head_dim"), path, ": hidden_size ", c.hidden,
            " is not a multiple of num_attention_heads ", c.n_heads);
  c.head_dim = f.count("head_dim", c.hidden / c.n_heads);
  KVF_CHECK(c.head_dim % 2 == 0, path, ": head_dim ", c.head_dim, " is odd (RoPE rotates pairs)");
  KVF_CHECK(c.n_heads % c.n_kv_heads == 0, path, ": num_attention_heads ", c.n_heads,
            " is not a multiple of num_key_value_heads ", c.n_kv_heads);
  c.norm_eps = f.positive("rms_norm_eps", 1e-6);
  c.rope_theta = f.positive("rope_theta", 10000.0);
  if (j.contains("rope_scaling")) read_rope_scaling(j["rope_scaling"], c, f);
  c.tie_embeddings = read_bool(j, path, "tie_word_embeddings", false);
  if (c.model_type == "lckv-llama") read_lckv(j, c, f);
  c.bos_id = f.token_id("bos_token_id", c.vocab);
  c.eos_id = f.token_id("eos_token_id", c.vocab);
  return c;
}

void add_hf_config_metadata(const HfDecoderConfig& c, std::map<std::string, gguf::Value>& kv) {
  const std::string a = c.arch + ".";
  kv["general.architecture"] = gguf::string_value(c.arch);
  kv[a + "block_count"] = gguf::int_value(c.n_layers);
  kv[a + "embedding_length"] = gguf::int_value(c.hidden);
  kv[a + "attention.head_count"] = gguf::int_value(c.n_heads);
  kv[a + "attention.head_count_kv"] = gguf::int_value(c.n_kv_heads);
  kv[a + "feed_forward_length"] = gguf::int_value(c.ffn);
  kv[a + "context_length"] = gguf::int_value(c.context_length);
  kv[a + "vocab_size"] = gguf::int_value(c.vocab);
  kv[a + "attention.layer_norm_rms_epsilon"] = gguf::float_value(c.norm_eps);
  kv[a + "rope.freq_base"] = gguf::float_value(c.rope_theta);
  if (c.head_dim * c.n_heads != c.hidden) {
    kv[a + "attention.key_length"] = gguf::int_value(c.head_dim);
    kv[a + "attention.value_length"] = gguf::int_value(c.head_dim);
  }
  kv[a + "rope.dimension_count"] = gguf::int_value(c.head_dim);
  if (!c.kv_layers.empty()) {
    kv[a + "lckv.kv_layers"] = gguf::int_array_value(c.kv_layers);
    kv[a + "lckv.prompt_iterations"] = gguf::int_value(c.prompt_iterations);
    kv[a + "lckv.mask_every_diagonal"] = gguf::bool_value(c.mask_every_diagonal);
  }
  if (c.rope_scaling == "linear" || c.rope_scaling == "yarn") {
    kv[a + "rope.scaling.type"] = gguf::string_value(c.rope_scaling);
    kv[a + "rope.scaling.factor"] = gguf::float_value(c.rope_factor);
    if (c.rope_scaling == "yarn" && c.original_context > 0)
      kv[a + "rope.scaling.original_context_length"] = gguf::int_value(c.original_context);
  }
}

std::vector<float> llama3_rope_factors(const HfDecoderConfig& c) {
  const double low_wavelen = (double)c.original_context / c.low_freq_factor;
  const double high_wavelen = (double)c.original_context / c.high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(c.rope_theta, (double)i / (double)c.head_dim);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back((float)c.rope_factor);
    } else {
      const double smooth =
          ((double)c.original_context / wavelen - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
      factors.push_back((float)(1.0 / ((1 - smooth) / c.rope_factor + smooth)));
    }
  }
  return factors;
}

}  // namespace kvf
