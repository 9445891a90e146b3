#include "model/bert_encoder.h"

#include <tbb/parallel_for.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/folder_path.h"
#include "core/json_file.h"
#include "io/safetensors.h"

namespace kvf {
namespace {

constexpr uint64_t kMaxConfigBytes = 64u << 20;  // the embedder's JSON files are a few KB; tokenizer.json a few MB

nlohmann::json read_json(const std::string& path) { return read_json_file(path, kMaxConfigBytes); }

int positive_int(const nlohmann::json& j, const char* key, const std::string& path) {
  const auto it = j.find(key);
  KVF_CHECK(it != j.end() && it->is_number_integer() && it->get<int64_t>() > 0 && it->get<int64_t>() <= INT32_MAX,
            path, ": '", key, "' must be a positive integer, got ", it == j.end() ? "nothing" : it->dump());
  return it->get<int>();
}

// 1_Pooling/config.json: either the old flags or the newer "pooling_mode" string.
Pooling read_pooling(const std::string& path) {
  const nlohmann::json j = read_json(path);
  if (const auto mode = j.find("pooling_mode"); mode != j.end() && mode->is_string()) {
    if (*mode == "mean") return Pooling::Mean;
    if (*mode == "cls") return Pooling::Cls;
    fail(path, ": pooling_mode '", mode->get<std::string>(), "' is not supported (mean, cls)");
  }
  std::vector<std::string> on;
  for (const auto& [key, value] : j.items())
    if (key.rfind("pooling_mode_", 0) == 0 && value.is_boolean() && value.get<bool>()) on.push_back(key);
  KVF_CHECK(on.size() == 1 && (on[0] == "pooling_mode_mean_tokens" || on[0] == "pooling_mode_cls_token"), path,
            ": exactly one of pooling_mode_mean_tokens and pooling_mode_cls_token must be set, got ",
            nlohmann::json(on).dump());
  return on[0] == "pooling_mode_mean_tokens" ? Pooling::Mean : Pooling::Cls;
}

// The Pooling module's folder from modules.json, "1_Pooling" when there is no modules.json.
std::string pooling_dir(const std::string& dir) {
  const std::string path = dir + "/modules.json";
  if (!std::filesystem::exists(path)) return dir + "/1_Pooling";
  const nlohmann::json modules = read_json(path);
  KVF_CHECK(modules.is_array(), path, ": expected an array of modules, got ", json_shown(modules));
  for (size_t i = 0; i < modules.size(); ++i) {
    const nlohmann::json& m = modules[i];
    const auto type = m.is_object() ? m.find("type") : m.end();
    if (type == m.end() || !type->is_string()) fail(path, ": [", i, "].type must be a string, got ", json_shown(m));
    const std::string t = type->get<std::string>();
    if (t.size() < 7 || t.compare(t.size() - 7, 7, "Pooling") != 0) continue;
    const auto folder = m.find("path");
    KVF_CHECK(folder != m.end() && folder->is_string(), path, ": [", i, "].path must be a string, got ",
              json_shown(m));
    const std::string problem = folder_path_problem(folder->get<std::string>());
    KVF_CHECK(problem.empty(), path, ": [", i, "].path \"", folder->get<std::string>(), "\" ", problem,
              " (a module is a folder inside the embedder's)");
    return dir + "/" + folder->get<std::string>();
  }
  fail(path, ": no Pooling module");
}

// sentence-transformers' max_seq_length (sentence_bert_config.json, which newer versions write without it), else
// the tokenizer's model_max_length, never past the position table.
int read_max_length(const std::string& dir, int max_positions) {
  const std::string st = dir + "/sentence_bert_config.json", tc = dir + "/tokenizer_config.json";
  const nlohmann::json st_config = std::filesystem::exists(st) ? read_json(st) : nlohmann::json::object();
  int n = max_positions;
  if (st_config.contains("max_seq_length")) {
    n = std::min(n, positive_int(st_config, "max_seq_length", st));
  } else if (std::filesystem::exists(tc)) {
    const nlohmann::json j = read_json(tc);
    // Tokenizers without a limit store a huge sentinel (1e30) here.
    if (const auto it = j.find("model_max_length"); it != j.end() && it->is_number() && it->get<double>() > 0)
      n = (int)std::min<double>(n, it->get<double>());
  }
  KVF_CHECK(n >= 2, dir, ": max sequence length ", n, " leaves no room for [CLS] and [SEP]");
  return n;
}

// Reads the tensors of one model file into backend tensors, checking shapes and feeding the fingerprint.
class WeightReader {
 public:
  WeightReader(const std::string& path, Backend& backend, XXH3_state_t* hash)
      : file_(safetensors::File::open(path)), backend_(backend), hash_(hash) {
    // Checkpoints saved from BertFor* heads carry a "bert." prefix.
    if (!file_->find("embeddings.word_embeddings.weight") && file_->find("bert.embeddings.word_embeddings.weight"))
      prefix_ = "bert.";
  }

  Tensor get(const std::string& name, const Shape& shape) { return upload(read(name, shape), shape); }

  // Each position's embedding plus the token type 0 embedding (single-sentence input: every token is of type 0),
  // summed once here: a token then adds one row, which it gathers by its position.
  Tensor position_and_type(int max_positions, int type_vocab_size, int64_t h) {
    std::vector<float> sum = read("embeddings.position_embeddings.weight", {max_positions, h});
    const std::vector<float> type = read("embeddings.token_type_embeddings.weight", {type_vocab_size, h});
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += type[i % (size_t)h];
    return upload(sum, {max_positions, h});
  }

 private:
  std::vector<float> read(const std::string& name, const Shape& shape) {
    const safetensors::TensorInfo& info = file_->tensor(prefix_ + name);
    KVF_CHECK(info.shape == shape, file_->path(), ": tensor '", info.name, "' has shape ", shape_str(info.shape),
              ", the config implies ", shape_str(shape));
    std::vector<float> values = file_->to_f32(info);
    XXH3_64bits_update(hash_, name.data(), name.size());
    XXH3_64bits_update(hash_, values.data(), values.size() * sizeof(float));
    return values;
  }
  Tensor upload(const std::vector<float>& values, const Shape& shape) {
    Tensor t = backend_.empty(DType::F32, shape);
    backend_.copy_from_host(t, values.data(), values.size() * sizeof(float));
    return t;
  }

  std::shared_ptr<const safetensors::File> file_;
  Backend& backend_;
  XXH3_state_t* hash_;
  std::string prefix_;
};

}  // namespace

BertConfig BertConfig::load(const std::string& path) {
  const nlohmann::json j = read_json(path);
  BertConfig c;
  c.vocab_size = positive_int(j, "vocab_size", path);
  c.hidden = positive_int(j, "hidden_size", path);
  c.layers = positive_int(j, "num_hidden_layers", path);
  c.heads = positive_int(j, "num_attention_heads", path);
  c.intermediate = positive_int(j, "intermediate_size", path);
  c.max_positions = positive_int(j, "max_position_embeddings", path);
  c.type_vocab_size = positive_int(j, "type_vocab_size", path);
  c.layer_norm_eps = j.value("layer_norm_eps", 1e-12f);
  KVF_CHECK(c.hidden % c.heads == 0, path, ": hidden_size ", c.hidden, " is not a multiple of num_attention_heads ",
            c.heads);
  const std::string act = j.value("hidden_act", "gelu");
  KVF_CHECK(act == "gelu", path, ": hidden_act '", act, "' is not supported (gelu)");
  const std::string pos = j.value("position_embedding_type", "absolute");
  KVF_CHECK(pos == "absolute", path, ": position_embedding_type '", pos, "' is not supported (absolute)");
  return c;
}

std::unique_ptr<SentenceEmbedder> SentenceEmbedder::load(const std::string& dir, Backend& backend) {
  std::unique_ptr<SentenceEmbedder> e(new SentenceEmbedder(backend, WordPieceTokenizer::load(dir)));
  BertConfig& c = e->config_;
  try {  // a field of the wrong JSON type surfaces as a nlohmann exception
    c = BertConfig::load(dir + "/config.json");
    e->pooling_ = read_pooling(pooling_dir(dir) + "/config.json");
    e->max_length_ = read_max_length(dir, c.max_positions);
  } catch (const nlohmann::json::exception& ex) {
    fail(dir, ": unexpected value in a config file: ", ex.what());
  }
  KVF_CHECK(e->tokenizer_.vocab_size() <= c.vocab_size, dir, "/vocab.txt: ", e->tokenizer_.vocab_size(),
            " tokens for an embedding table of ", c.vocab_size, " (config.json)");

  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(hash.get());
  const std::string desc = nlohmann::json{{"vocab_size", c.vocab_size}, {"hidden", c.hidden},
                                          {"layers", c.layers}, {"heads", c.heads},
                                          {"intermediate", c.intermediate}, {"max_positions", c.max_positions},
                                          {"type_vocab_size", c.type_vocab_size}, {"eps", c.layer_norm_eps},
                                          {"pooling", (int)e->pooling_}, {"max_length", e->max_length_},
                                          {"tokenizer", e->tokenizer_.hash()}}
                               .dump();
  XXH3_64bits_update(hash.get(), desc.data(), desc.size());

  WeightReader w(dir + "/model.safetensors", backend, hash.get());
  const int64_t h = c.hidden, f = c.intermediate;
  e->word_embd_ = w.get("embeddings.word_embeddings.weight", {c.vocab_size, h});
  e->pos_type_embd_ = w.position_and_type(c.max_positions, c.type_vocab_size, h);
  e->embd_ln_g_ = w.get("embeddings.LayerNorm.weight", {h});
  e->embd_ln_b_ = w.get("embeddings.LayerNorm.bias", {h});
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Layer l;
    l.wq = w.get(p + "attention.self.query.weight", {h, h});
    l.bq = w.get(p + "attention.self.query.bias", {h});
    l.wk = w.get(p + "attention.self.key.weight", {h, h});
    l.bk = w.get(p + "attention.self.key.bias", {h});
    l.wv = w.get(p + "attention.self.value.weight", {h, h});
    l.bv = w.get(p + "attention.self.value.bias", {h});
    l.wo = w.get(p + "attention.output.dense.weight", {h, h});
    l.bo = w.get(p + "attention.output.dense.bias", {h});
    l.ln1_g = w.get(p + "attention.output.LayerNorm.weight", {h});
    l.ln1_b = w.get(p + "attention.output.LayerNorm.bias", {h});
    l.w1 = w.get(p + "intermediate.dense.weight", {f, h});
    l.b1 = w.get(p + "intermediate.dense.bias", {f});
    l.w2 = w.get(p + "output.dense.weight", {h, f});
    l.b2 = w.get(p + "output.dense.bias", {h});
    l.ln2_g = w.get(p + "output.LayerNorm.weight", {h});
    l.ln2_b = w.get(p + "output.LayerNorm.bias", {h});
    e->layers_.push_back(std::move(l));
  }
  e->fingerprint_ = XXH3_64bits_digest(hash.get());
  return e;
}

// The tokens of a batch without its padding: sequence s owns rows [offset[s], offset[s + 1]).
struct SentenceEmbedder::Packed {
  std::vector<int64_t> offset;
  Tensor zero_pos;  // i32 zeros, one per row of the longest sequence
};

void SentenceEmbedder::layer_forward(const Layer& w, const Packed& p, Tensor& x) const {
  Backend& be = *backend_;
  const int64_t n = x.dim(0), h = config_.hidden, heads = config_.heads, hd = h / heads;
  const auto linear = [&](const Tensor& in, const Tensor& weight, const Tensor& bias, int64_t out_dim) {
    Tensor y = be.empty(DType::F32, {in.dim(0), out_dim});
    be.matmul_nt(in, weight, y);
    be.add_bias(y, bias);
    return y;
  };
  const Tensor q = linear(x, w.wq, w.bq, h), k = linear(x, w.wk, w.bk, h), v = linear(x, w.wv, w.bv, h);
  Tensor ctx = be.empty(DType::F32, {n, h});
  for (size_t s = 0; s + 1 < p.offset.size(); ++s) {
    const int64_t begin = p.offset[s], len = p.offset[s + 1] - begin;
    AttentionArgs a;
    a.q = q.rows(begin, len).reshaped({len, heads, hd});
    a.k = k.rows(begin, len).reshaped({len, heads, hd});
    a.v = v.rows(begin, len).reshaped({len, heads, hd});
    a.out = ctx.rows(begin, len).reshaped({len, heads, hd});
    // Bidirectional: with every query and key at position 0, each query sees every key of its sequence.
    a.q_pos = p.zero_pos.rows(0, len);
    a.k_pos = a.q_pos;
    a.scale = 1.0f / std::sqrt((float)hd);
    be.attention(a);
  }
  Tensor attn = linear(ctx, w.wo, w.bo, h);
  be.add_inplace(attn, x);
  be.layer_norm(attn, w.ln1_g, w.ln1_b, config_.layer_norm_eps);

  Tensor ffn = be.empty(DType::F32, {n, config_.intermediate});
  be.matmul_nt(attn, w.w1, ffn);
  be.bias_gelu(ffn, w.b1);
  x = linear(ffn, w.w2, w.b2, h);
  be.add_inplace(x, attn);
  be.layer_norm(x, w.ln2_g, w.ln2_b, config_.layer_norm_eps);
}

std::vector<float> SentenceEmbedder::embed_tokens(const TokenBatch& batch) const {
  KVF_CHECK(batch.ids.size() == (size_t)(batch.rows * batch.cols) && batch.mask.size() == batch.ids.size(),
            "embed_tokens: ", batch.ids.size(), " ids and ", batch.mask.size(), " mask entries for a batch of ",
            batch.rows, " x ", batch.cols);
  KVF_CHECK(batch.cols <= config_.max_positions, "embed_tokens: ", batch.cols, " columns exceed the model's ",
            config_.max_positions, " positions");
  Backend& be = *backend_;
  const int64_t h = config_.hidden;
  Packed p;
  p.offset.push_back(0);
  std::vector<int32_t> ids, pos;
  for (int64_t r = 0; r < batch.rows; ++r) {
    for (int64_t c = 0; c < batch.cols; ++c) {
      if (!batch.mask[(size_t)(r * batch.cols + c)]) continue;
      ids.push_back(batch.ids[(size_t)(r * batch.cols + c)]);
      pos.push_back((int32_t)c);
    }
    KVF_CHECK((int64_t)ids.size() > p.offset.back(), "embed_tokens: row ", r, " has no tokens");
    p.offset.push_back((int64_t)ids.size());
  }
  const int64_t n = (int64_t)ids.size();
  p.zero_pos = be.empty(DType::I32, {batch.cols});
  const std::vector<int32_t> zeros((size_t)batch.cols, 0);
  be.copy_from_host(p.zero_pos, zeros.data(), zeros.size() * sizeof(int32_t));

  Tensor id_tensor = be.empty(DType::I32, {n});
  be.copy_from_host(id_tensor, ids.data(), ids.size() * sizeof(int32_t));
  Tensor x = be.empty(DType::F32, {n, h});
  be.embedding(word_embd_, id_tensor, x);
  Tensor pos_tensor = be.empty(DType::I32, {n});
  be.copy_from_host(pos_tensor, pos.data(), pos.size() * sizeof(int32_t));
  Tensor added = be.empty(DType::F32, {n, h});
  be.gather_rows(pos_type_embd_, pos_tensor, added);
  be.add_inplace(x, added);
  be.layer_norm(x, embd_ln_g_, embd_ln_b_, config_.layer_norm_eps);
  for (const Layer& l : layers_) layer_forward(l, p, x);

  // Pooling reads every row once: on the host (a copy from a device backend).
  std::vector<float> copied;
  const float* hidden = x.data<float>();
  if (be.device() != Device::Host) {
    copied.resize((size_t)(n * h));
    be.copy_to_host(x, copied.data(), copied.size() * sizeof(float));
    hidden = copied.data();
  }

  std::vector<float> out((size_t)(batch.rows * h));
  tbb::parallel_for(int64_t{0}, batch.rows, [&](int64_t s) {
    const int64_t begin = p.offset[(size_t)s], len = p.offset[(size_t)s + 1] - begin;
    const int64_t used = pooling_ == Pooling::Cls ? 1 : len;  // CLS: the sequence's first token
    std::vector<double> acc((size_t)h, 0.0);
    for (int64_t t = begin; t < begin + used; ++t)
      for (int64_t i = 0; i < h; ++i) acc[(size_t)i] += hidden[t * h + i];
    double norm = 0.0;
    for (double a : acc) norm += a * a;
    // Mean pooling's division by the count cancels in the normalisation.
    const double inv = 1.0 / std::max(std::sqrt(norm), 1e-12 * (double)used);
    for (int64_t i = 0; i < h; ++i) out[(size_t)(s * h + i)] = (float)(acc[(size_t)i] * inv);
  });
  return out;
}

std::vector<float> SentenceEmbedder::embed(const std::vector<std::string>& texts, int batch_size) const {
  KVF_CHECK(batch_size > 0, "embed: batch_size ", batch_size, " must be positive");
  std::vector<float> out;
  out.reserve(texts.size() * (size_t)dim());
  for (size_t b = 0; b < texts.size(); b += (size_t)batch_size) {
    const std::vector<std::string> part(texts.begin() + (int64_t)b,
                                        texts.begin() + (int64_t)std::min(texts.size(), b + (size_t)batch_size));
    const std::vector<float> e = embed_tokens(tokenizer_.encode_batch(part, max_length_));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

}  // namespace kvf
