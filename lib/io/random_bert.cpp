#include "io/random_bert.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "io/file_roles.h"

namespace kvf {
namespace {

using nlohmann::json;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// n values of mean `offset` and standard deviation `scale`, element i drawn from hash(stream, i): the sum of four
// 16-bit uniforms, standardised (as io/random_model.cpp draws a decoder's weights).
std::vector<float> random_values(uint64_t stream, size_t n, float scale, float offset = 0.0f) {
  std::vector<float> v(n);
  const uint64_t key = splitmix64(stream);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = splitmix64(key ^ (i * 0xD1B54A32D192ED03ull));
    const float sum = (float)((h & 0xFFFF) + (h >> 16 & 0xFFFF) + (h >> 32 & 0xFFFF) + (h >> 48) + 2) / 65536.0f;
    v[i] = offset + scale * (sum - 2.0f) * 1.7320508f;
  }
  return v;
}

const std::vector<std::string>& default_words() {
  static const std::vector<std::string> words = {"the",      "a",      "an",    "is",    "are",    "was",
                                                 "of",       "and",    "in",    "on",    "to",     "for",
                                                 "with",     "by",     "from",  "as",    "at",     "its",
                                                 "it",       "that",   "which", "what",  "who",    "where",
                                                 "when",     "how",    "not",   "or",    "be",     "has",
                                                 "have",     "known",  "large", "small", "long",   "made",
                                                 "played",   "planet", "water", "ice",   "string", "instrument",
                                                 "language", "game",   "tea",   "coffee"};
  return words;
}

struct WeightValues {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// A safetensors file: an 8-byte little-endian header length, the JSON header (padded with spaces to 8 bytes),
// then the tensors' F32 bytes in order.
std::string safetensors_bytes(const std::vector<WeightValues>& tensors) {
  json header = {{"__metadata__", {{"format", "pt"}}}};
  size_t offset = 0;
  for (const WeightValues& t : tensors) {
    const size_t bytes = t.values.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.resize((h.size() + 7) / 8 * 8, ' ');
  const uint64_t n = h.size();
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[(size_t)i] = (char)(n >> (8 * i) & 0xFF);
  file += h;
  file.reserve(file.size() + offset);
  for (const WeightValues& t : tensors)
    file.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
  return file;
}

}  // namespace

std::vector<std::string> random_bert_vocabulary(const RandomBertSpec& spec) {
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::string chars;
  for (char c = 'a'; c <= 'z'; ++c) chars += c;
  for (char c = '0'; c <= '9'; ++c) chars += c;
  for (char c : chars) vocab.push_back(std::string(1, c));
  for (char c = '!'; c <= '~'; ++c)
    if (std::ispunct((unsigned char)c)) vocab.push_back(std::string(1, c));
  for (char c : chars) vocab.push_back("##" + std::string(1, c));
  std::set<std::string> seen(vocab.begin(), vocab.end());
  for (const std::string& w : spec.words.empty() ? default_words() : spec.words) {
    KVF_CHECK(!w.empty() && w.find_first_of(" \t\r\n") == std::string::npos, "random BERT: vocabulary word '", w,
              "' is empty or holds whitespace");
    if (seen.insert(w).second) vocab.push_back(w);
  }
  return vocab;
}

void write_random_bert(const RandomBertSpec& s, const std::string& dir) {
  KVF_CHECK(s.n_layers >= 1 && s.hidden >= 1 && s.n_heads >= 1 && s.intermediate >= 1 && s.max_positions >= 2,
            "random BERT: layers, hidden, heads and intermediate must be positive and max_positions at least 2");
  KVF_CHECK(s.hidden % s.n_heads == 0, "random BERT: hidden ", s.hidden, " must split into ", s.n_heads, " heads");
  KVF_CHECK(s.pooling == "mean" || s.pooling == "cls", "random BERT: pooling '", s.pooling, "' (mean, cls)");
  const int max_len = s.max_seq_length > 0 ? s.max_seq_length : s.max_positions;
  KVF_CHECK(max_len >= 2 && max_len <= s.max_positions, "random BERT: max_seq_length ", max_len,
            " must be 2 to max_positions (", s.max_positions, ")");
  const std::vector<std::string> vocab = random_bert_vocabulary(s);
  const int64_t v = (int64_t)vocab.size(), h = s.hidden, f = s.intermediate;

  std::vector<WeightValues> tensors;
  uint64_t stream = (uint64_t)s.seed << 32;  // one stream per tensor, in the order they are listed
  const auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float offset) {
    size_t n = 1;
    for (int64_t d : shape) n *= (size_t)d;
    tensors.push_back({name, std::move(shape), random_values(stream++, n, scale, offset)});
  };
  const auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    add(name + ".weight", {rows, cols}, 1.5f / std::sqrt((float)cols), 0.0f);
    add(name + ".bias", {rows}, 0.02f, 0.0f);
  };
  const auto layer_norm = [&](const std::string& name) {
    add(name + ".weight", {h}, 0.1f, 1.0f);
    add(name + ".bias", {h}, 0.1f, 0.0f);
  };
  add("embeddings.word_embeddings.weight", {v, h}, 1.0f, 0.0f);
  add("embeddings.position_embeddings.weight", {s.max_positions, h}, 0.1f, 0.0f);
  add("embeddings.token_type_embeddings.weight", {2, h}, 0.1f, 0.0f);
  layer_norm("embeddings.LayerNorm");
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    matrix(p + "attention.self.query", h, h);
    matrix(p + "attention.self.key", h, h);
    matrix(p + "attention.self.value", h, h);
    matrix(p + "attention.output.dense", h, h);
    layer_norm(p + "attention.output.LayerNorm");
    matrix(p + "intermediate.dense", f, h);
    matrix(p + "output.dense", h, f);
    layer_norm(p + "output.LayerNorm");
  }

  std::filesystem::create_directories(dir + "/1_Pooling");
  const json config = {{"architectures", {"BertModel"}},
                       {"model_type", "bert"},
                       {"hidden_act", "gelu"},
                       {"hidden_size", h},
                       {"intermediate_size", f},
                       {"num_hidden_layers", s.n_layers},
                       {"num_attention_heads", s.n_heads},
                       {"max_position_embeddings", s.max_positions},
                       {"type_vocab_size", 2},
                       {"vocab_size", v},
                       {"layer_norm_eps", 1e-12},
                       {"position_embedding_type", "absolute"},
                       {"pad_token_id", 0}};
  write_output_file(dir + "/config.json", config.dump(2) + "\n");
  std::string vocab_txt;
  for (const std::string& t : vocab) vocab_txt += t + "\n";
  write_output_file(dir + "/vocab.txt", vocab_txt);
  const json tokenizer_config = {{"do_lower_case", true},    {"model_max_length", max_len},
                                 {"unk_token", "[UNK]"},     {"sep_token", "[SEP]"},
                                 {"pad_token", "[PAD]"},     {"cls_token", "[CLS]"},
                                 {"mask_token", "[MASK]"},   {"tokenize_chinese_chars", true},
                                 {"strip_accents", nullptr}, {"tokenizer_class", "BertTokenizer"}};
  write_output_file(dir + "/tokenizer_config.json", tokenizer_config.dump(2) + "\n");
  write_output_file(dir + "/sentence_bert_config.json",
                    json{{"max_seq_length", max_len}, {"do_lower_case", false}}.dump(2) + "\n");
  const json modules = json::array(
      {{{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}},
       {{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}},
       {{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}}});
  write_output_file(dir + "/modules.json", modules.dump(2) + "\n");
  const json pooling = {{"word_embedding_dimension", h},
                        {"pooling_mode_cls_token", s.pooling == "cls"},
                        {"pooling_mode_mean_tokens", s.pooling == "mean"},
                        {"pooling_mode_max_tokens", false},
                        {"pooling_mode_mean_sqrt_len_tokens", false}};
  write_output_file(dir + "/1_Pooling/config.json", pooling.dump(2) + "\n");
  write_output_file(dir + "/model.safetensors", safetensors_bytes(tensors));
}

}  // namespace kvf
