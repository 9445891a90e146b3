// Hugging Face folders load as the GGUF file they were written from: the same logits and KV bit for bit (llama's
// Q/K rows permuted back, qwen2's left alone; F32, F16 and BF16; one file or shards), and a bad folder gets one
// error naming the file and the field, tensor or value.
#include "io/hf_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "io/hf_config.h"
#include "model/decoder.h"
#include "model/gguf_tokenizer.h"
#include "support/hf_folder_writer.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using nlohmann::json;

struct Case {
  std::string arch;
  GgmlType type;
  int shards;
};
std::string case_name(const Case& c) { return c.arch + "_" + ggml_type_name(c.type) + "_" + std::to_string(c.shards); }
void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

class HfFolderMatchesGguf : public ::testing::TestWithParam<Case> {};

std::vector<float> host(Backend& b, const Tensor& t) {
  std::vector<float> v(t.numel());
  b.copy_to_host(t, v.data(), v.size() * sizeof(float));
  return v;
}

ForwardResult run(const Decoder& d) {
  ForwardRequest r;
  r.tokens = {5, 17, 3, 96, 40, 41, 7};
  r.positions = {0, 1, 2, 3, 4, 5, 6};
  r.logit_rows = {0, 3, 6};
  r.return_kv = true;
  return d.forward(r);
}

TEST_P(HfFolderMatchesGguf, SameLogitsAndKv) {
  const Case& c = GetParam();
  test::TinyModelSpec spec;
  spec.arch = c.arch;
  spec.matrix_type = c.type;
  const std::string gguf = test::write_tiny_model(spec);
  const std::string dir = (test::fresh_test_dir() / "model").string();
  test::write_hf_folder(gguf, dir, {c.shards});
  auto backend = make_cpu_backend();
  for (ComputeMode mode : {ComputeMode::F32, ComputeMode::Fast}) {
    const auto from_gguf = Decoder::load(gguf, *backend, mode);
    const auto from_hf = Decoder::load(dir, *backend, mode);
    EXPECT_EQ(from_hf->config().rope_pairing, from_gguf->config().rope_pairing);
    const ForwardResult a = run(*from_gguf), b = run(*from_hf);
    EXPECT_EQ(a.logits, b.logits) << compute_mode_name(mode);
    ASSERT_EQ(a.kv.k.size(), b.kv.k.size());
    for (size_t l = 0; l < a.kv.k.size(); ++l) {
      EXPECT_EQ(host(*backend, a.kv.k[l]), host(*backend, b.kv.k[l])) << l;
      EXPECT_EQ(host(*backend, a.kv.v[l]), host(*backend, b.kv.v[l])) << l;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Folders, HfFolderMatchesGguf,
                         ::testing::Values(Case{"llama", GgmlType::F32, 1}, Case{"llama", GgmlType::BF16, 2},
                                           Case{"llama", GgmlType::F16, 3}, Case{"qwen2", GgmlType::F32, 2},
                                           Case{"qwen2", GgmlType::BF16, 1}),
                         [](const auto& param_info) { return case_name(param_info.param); });

// A good tiny folder, changed by `edit`; the error message of loading it.
class HfFolderErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (test::fresh_test_dir() / "model").string();
    test::write_hf_folder(test::write_tiny_model({}), dir_, {2});
  }
  json read(const std::string& file) const { return read_json_file(dir_ + "/" + file); }
  void write(const std::string& file, const json& j) const { std::ofstream(dir_ + "/" + file) << j.dump(); }
  void edit_config(const std::function<void(json&)>& edit) const {
    json j = read("config.json");
    edit(j);
    write("config.json", j);
  }
  std::string load_error() const {
    auto backend = make_cpu_backend();
    try {
      Decoder::load(dir_, *backend);
    } catch (const Error& e) {
      return e.what();
    }
    return "(loaded)";
  }
  std::string dir_;
};

#define EXPECT_ERROR_HAS(text) EXPECT_NE(load_error().find(text), std::string::npos) << load_error()

TEST_F(HfFolderErrors, UnsupportedRopeScalingNamesTheType) {
  edit_config([](json& j) { j["rope_scaling"] = {{"type", "longrope"}, {"factor", 4.0}}; });
  EXPECT_ERROR_HAS("model/config.json: rope_scaling.type \"longrope\" is not supported");
}

TEST_F(HfFolderErrors, BadCountsNameTheField) {
  edit_config([](json& j) { j["num_attention_heads"] = 0; });
  EXPECT_ERROR_HAS("config.json: num_attention_heads = 0 is not a positive integer");
  edit_config([](json& j) {
    j["num_attention_heads"] = 4;
    j["num_key_value_heads"] = 3;
  });
  EXPECT_ERROR_HAS("num_attention_heads 4 is not a multiple of num_key_value_heads 3");
  edit_config([](json& j) { j.erase("hidden_size"); });
  EXPECT_ERROR_HAS("config.json: missing \"hidden_size\"");
}

TEST_F(HfFolderErrors, NullsAndWrongJsonTypesNameTheFile) {
  edit_config([](json& j) { j["num_attention_heads"] = nullptr; });
  EXPECT_ERROR_HAS("config.json: missing \"num_attention_heads\"");
  edit_config([](json& j) {
    j["num_attention_heads"] = 4;
    j["model_type"] = 7;
  });
  EXPECT_ERROR_HAS("config.json: model_type = 7 is not a string");
  edit_config([](json& j) { j["model_type"] = "llama"; });
  write("tokenizer_config.json", {{"clean_up_tokenization_spaces", "yes"}});
  EXPECT_ERROR_HAS("model/tokenizer_config.json: clean_up_tokenization_spaces = \"yes\" is not true or false");
}

TEST_F(HfFolderErrors, UnknownModelTypeIsNamed) {
  edit_config([](json& j) { j["model_type"] = "gemma3"; });
  EXPECT_ERROR_HAS("config.json: model_type \"gemma3\" is not supported (llama, mistral, qwen2, lckv-llama)");
}

TEST_F(HfFolderErrors, WrongShapeNamesTensorAndShard) {
  edit_config([](json& j) { j["intermediate_size"] = 100; });
  EXPECT_ERROR_HAS(
      ".safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has shape [128, 64], expected [100, 64]");
}

TEST_F(HfFolderErrors, MissingShardIsNamed) {
  std::filesystem::remove(dir_ + "/model-00002-of-00002.safetensors");
  EXPECT_ERROR_HAS("model.safetensors.index.json: shard \"model-00002-of-00002.safetensors\"");
  EXPECT_ERROR_HAS("does not exist");
}

TEST_F(HfFolderErrors, MissingTensorIsNamed) {
  json index = read("model.safetensors.index.json");
  index["weight_map"].erase("model.layers.1.mlp.up_proj.weight");
  write("model.safetensors.index.json", index);
  EXPECT_ERROR_HAS("tensor 'model.layers.1.mlp.up_proj.weight' is missing");
}

TEST_F(HfFolderErrors, WrongDtypeNamesTensorAndDtype) {
  std::filesystem::remove(dir_ + "/model.safetensors.index.json");
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"})
    std::filesystem::remove(dir_ + "/" + shard);
  test::write_safetensors(dir_ + "/model.safetensors",
                          {{"model.embed_tokens.weight", "I8", {97, 64}, std::string(97 * 64, '\0')}});
  EXPECT_ERROR_HAS("model.safetensors: tensor 'model.embed_tokens.weight' has dtype I8; expected F32, F16 or BF16");
}

TEST_F(HfFolderErrors, NoWeightsIsNamed) {
  std::filesystem::remove(dir_ + "/model.safetensors.index.json");
  EXPECT_ERROR_HAS("neither model.safetensors nor model.safetensors.index.json");
}

TEST_F(HfFolderErrors, UnsupportedTokenizersAreNamed) {
  json tok = read("tokenizer.json");
  tok["model"]["type"] = "Unigram";
  write("tokenizer.json", tok);
  EXPECT_ERROR_HAS("tokenizer.json: model.type \"Unigram\" is not supported");
  tok["model"]["type"] = "BPE";
  tok["pre_tokenizer"] = {{"type", "Metaspace"}};
  write("tokenizer.json", tok);
  EXPECT_ERROR_HAS("tokenizer.json: pre_tokenizer {\"type\":\"Metaspace\"} is not supported");
  tok["pre_tokenizer"] = nullptr;
  tok["added_tokens"] = {{{"id", 500}, {"content", "<|x|>"}, {"special", true}}};
  write("tokenizer.json", tok);
  EXPECT_ERROR_HAS("added_tokens[0] token \"<|x|>\" has id 500, outside vocab_size 97");
}

TEST_F(HfFolderErrors, FolderWithoutConfigIsNamed) {
  std::filesystem::remove(dir_ + "/config.json");
  EXPECT_ERROR_HAS("model: a folder without config.json");
}

// tokenizer.json's NFC normalizer composes text before it is split (Qwen2's tokenizer.json carries one).
TEST(HfTokenizer, NfcNormalizerComposesTextFirst) {
  test::TinyModelSpec spec;
  spec.vocab = 300;  // every byte a token
  const std::string dir = (test::fresh_test_dir() / "model").string();
  test::write_hf_folder(test::write_tiny_model(spec), dir);
  const auto encode = [&](const std::string& text) {
    return BpeTokenizer(bpe_vocabulary_from_gguf(*open_decoder_file(dir))).encode(text, false, false);
  };
  const std::string decomposed =
                        "Caf"
                        "e\xcc\x81",
                    composed = "Caf\xc3\xa9";
  EXPECT_NE(encode(decomposed), encode(composed));
  json tok = read_json_file(dir + "/tokenizer.json");
  tok["normalizer"] = {{"type", "NFC"}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
  EXPECT_EQ(encode(decomposed), encode(composed));
  tok["normalizer"] = {{"type", "NFKC"}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
  try {
    encode(composed);
    ADD_FAILURE() << "NFKC accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json: normalizer {\"type\":\"NFKC\"} is not supported (none, NFC)"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfConfig, RopeScalingKinds) {
  const std::string dir = test::fresh_test_dir().string();
  const auto config_with = [&](const json& rope_scaling) {
    json j = {{"model_type", "llama"},    {"num_hidden_layers", 2},      {"hidden_size", 64},
              {"num_attention_heads", 4}, {"intermediate_size", 128},    {"vocab_size", 97},
              {"rope_theta", 500000.0},   {"rope_scaling", rope_scaling}};
    std::ofstream(dir + "/config.json") << j.dump();
    return read_hf_config(dir + "/config.json");
  };
  EXPECT_EQ(config_with(nullptr).rope_scaling, "none");
  const HfDecoderConfig linear = config_with({{"type", "linear"}, {"factor", 2.0}});
  EXPECT_EQ(linear.rope_scaling, "linear");
  std::map<std::string, gguf::Value> kv;
  add_hf_config_metadata(linear, kv);
  EXPECT_EQ(kv.at("llama.rope.scaling.type").s, "linear");
  EXPECT_EQ(kv.at("llama.rope.scaling.factor").f, 2.0);
  // Llama 3.1's settings: short wavelengths keep their frequency, long ones are divided by the factor, and the band
  // between is interpolated smoothly (factors rise monotonically from 1 to 8).
  const HfDecoderConfig l3 = config_with({{"rope_type", "llama3"},
                                          {"factor", 8.0},
                                          {"low_freq_factor", 1.0},
                                          {"high_freq_factor", 4.0},
                                          {"original_max_position_embeddings", 8192}});
  const std::vector<float> f = llama3_rope_factors(l3);
  ASSERT_EQ(f.size(), 8u);
  EXPECT_EQ(f.front(), 1.0f);
  EXPECT_EQ(f.back(), 8.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

}  // namespace
}  // namespace kvf
