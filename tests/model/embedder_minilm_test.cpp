// The sentence embedder against HF references (tests/reference/make_embedder_fixtures.py): all-MiniLM-L6-v2's
// WordPiece ids against `tokenizers` (tests/fixtures/wordpiece_minilm.json) and its embeddings against
// sentence-transformers (embeddings_minilm.json); a tiny random BERT in the bge-small-en-v1.5 layout (CLS
// pooling, tests/fixtures/tiny_bert_cls) against sentence-transformers too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "core/json_file.h"
#include "model/bert_encoder.h"
#include "support/model_files.h"

namespace kvf {
namespace {

using nlohmann::json;

json read_fixture(const std::string& name) { return read_json_file(test::fixture_path(name)); }

std::string minilm_dir() { return resolve_model("minilm"); }

Backend& backend() {
  static const std::unique_ptr<Backend> instance = make_cpu_backend();
  return *instance;
}

const SentenceEmbedder& minilm() {
  static const std::unique_ptr<SentenceEmbedder> instance = SentenceEmbedder::load(minilm_dir(), backend());
  return *instance;
}

double cosine(const float* a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    dot += (double)a[i] * b[i];
    na += (double)a[i] * a[i];
    nb += (double)b[i] * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// Embeds the fixture's texts in batches of 7 (so batches split unevenly) and compares each row by cosine.
void expect_embeddings_match(const SentenceEmbedder& model, const json& fixture, const char* label) {
  const auto texts = fixture.at("texts").get<std::vector<std::string>>();
  const auto expected = fixture.at("embeddings").get<std::vector<std::vector<float>>>();
  ASSERT_EQ(texts.size(), expected.size());
  const std::vector<float> got = model.embed(texts, 7);
  ASSERT_EQ(got.size(), texts.size() * (size_t)model.dim());
  double min_cos = 1.0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(expected[i].size(), (size_t)model.dim());
    const float* row = got.data() + i * (size_t)model.dim();
    double norm = 0;
    for (int d = 0; d < model.dim(); ++d) norm += (double)row[d] * row[d];
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5) << "text " << i;
    const double c = cosine(row, expected[i]);
    min_cos = std::min(min_cos, c);
    EXPECT_GE(c, 0.9999) << "text " << i << ": " << texts[i].substr(0, 80);
  }
  std::printf("%s: minimum cosine to sentence-transformers over %zu texts: %.9f (1 - cos = %.1e)\n", label,
              texts.size(), min_cos, 1.0 - min_cos);
}

TEST(EmbedderMiniLM, TokenIdsMatchHfTokenizers) {
  const json fixture = read_fixture("wordpiece_minilm.json");
  const WordPieceTokenizer& tok = minilm().tokenizer();
  const int max_length = fixture.at("max_length").get<int>();
  EXPECT_EQ(minilm().max_length(), max_length);  // sentence_bert_config.json's max_seq_length
  size_t mismatches = 0;
  for (const json& c : fixture.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const auto ids = c.at("ids").get<std::vector<int32_t>>();
    if (tok.encode(text, max_length) != ids && ++mismatches <= 10)
      ADD_FAILURE() << "ids differ for " << json(text).dump();
  }
  EXPECT_EQ(mismatches, 0u) << "of " << fixture.at("cases").size() << " strings";
  EXPECT_GE(fixture.at("cases").size(), 200u);
}

TEST(EmbedderMiniLM, ConfigIsReadFromTheModelFolder) {
  EXPECT_EQ(minilm().dim(), 384);
  EXPECT_EQ(minilm().config().layers, 6);
  EXPECT_EQ(minilm().pooling(), Pooling::Mean);
  EXPECT_TRUE(minilm().tokenizer().options().lowercase);
}

TEST(EmbedderMiniLM, EmbeddingsMatchSentenceTransformers) {
  expect_embeddings_match(minilm(), read_fixture("embeddings_minilm.json"), "all-MiniLM-L6-v2");
}

TEST(EmbedderMiniLM, BatchingDoesNotChangeEmbeddings) {
  const std::vector<std::string> texts = {"short", "a somewhat longer sentence about the weather today",
                                          "", "Paris is the capital of France."};
  const std::vector<float> together = minilm().embed(texts, 32);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<float> alone = minilm().embed({texts[i]});
    EXPECT_GE(cosine(together.data() + i * 384, alone), 0.999999) << texts[i];
  }
  EXPECT_TRUE(minilm().embed({}).empty());
}

// The tiny model as a loadable folder: a temp copy of the fixture with its weights under their real name.
std::string tiny_bert_copy(const std::string& name) {
  namespace fs = std::filesystem;
  const std::string dir = ::testing::TempDir() + name;
  fs::remove_all(dir);
  fs::copy(test::fixture_path("tiny_bert_cls"), dir, fs::copy_options::recursive);
  fs::rename(dir + "/model.safetensors.fixture", dir + "/model.safetensors");
  return dir;
}

TEST(EmbedderMiniLM, FingerprintIsStableAndSeesTheWeights) {
  const auto again = SentenceEmbedder::load(minilm_dir(), backend());
  EXPECT_EQ(again->fingerprint(), minilm().fingerprint());
  const auto tiny = SentenceEmbedder::load(tiny_bert_copy("kvf_tiny_bert_fingerprint"), backend());
  EXPECT_NE(tiny->fingerprint(), minilm().fingerprint());
}

TEST(EmbedderTinyBertCls, ClsPoolingMatchesSentenceTransformers) {
  const auto model = SentenceEmbedder::load(tiny_bert_copy("kvf_tiny_bert_cls"), backend());
  EXPECT_EQ(model->pooling(), Pooling::Cls);
  EXPECT_EQ(model->max_length(), 24);
  expect_embeddings_match(*model, read_fixture("embeddings_tiny_bert_cls.json"), "tiny BERT, CLS pooling");
}

// A copy of the tiny model with one file replaced must fail to load, naming the file and the problem.
TEST(EmbedderTinyBertCls, LoadErrorsNameTheFileAndField) {
  const auto load_with = [&](const std::string& file, const json& content) {
    const std::string dir = tiny_bert_copy("kvf_tiny_bert_cls_broken");
    std::ofstream(dir + "/" + file) << content.dump();
    try {
      SentenceEmbedder::load(dir, backend());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  json config = read_fixture("tiny_bert_cls/config.json");
  config["hidden_size"] = 48;
  EXPECT_THAT(load_with("config.json", config), ::testing::HasSubstr("'embeddings.word_embeddings.weight' has shape"));
  config = read_fixture("tiny_bert_cls/config.json");
  config["hidden_act"] = "relu";
  EXPECT_THAT(load_with("config.json", config), ::testing::HasSubstr("config.json: hidden_act 'relu'"));
  config.erase("hidden_act");
  config["num_hidden_layers"] = "two";
  EXPECT_THAT(load_with("config.json", config), ::testing::HasSubstr("'num_hidden_layers' must be a positive"));
  const json both = {{"pooling_mode_cls_token", true}, {"pooling_mode_mean_tokens", true}};
  EXPECT_THAT(load_with("1_Pooling/config.json", both), ::testing::HasSubstr("1_Pooling/config.json: exactly one of"));
  EXPECT_THAT(load_with("1_Pooling/config.json", {{"pooling_mode", "max"}}),
              ::testing::HasSubstr("pooling_mode 'max' is not supported"));
  // modules.json names the Pooling module's folder, which must be inside the model's (docs/safety.md).
  const json outside = json::array({{{"type", "sentence_transformers.models.Pooling"}, {"path", "../elsewhere"}}});
  EXPECT_THAT(load_with("modules.json", outside),
              ::testing::HasSubstr("modules.json: [0].path \"../elsewhere\" leads out of the folder through '..'"));
  EXPECT_THAT(load_with("modules.json", json::array({{{"type", 5}}})),
              ::testing::HasSubstr("modules.json: [0].type must be a string"));
  EXPECT_THAT(load_with("model.safetensors", "not a model"), ::testing::HasSubstr("model.safetensors: header length"));
}

}  // namespace
}  // namespace kvf
