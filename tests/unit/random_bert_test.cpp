// Random BERT embedders (io/random_bert.h): the folder is what the embedder loads, the vocabulary spells any
// ASCII text, the same seed writes the same files, and the spec's shape, pooling and length reach the loader.
#include "io/random_bert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backend/backend.h"
#include "core/error.h"
#include "model/bert_encoder.h"
#include "support/temp_dir.h"
#include "support/tiny_corpus.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

double dot(const float* a, const float* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += (double)a[i] * b[i];
  return s;
}

Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

TEST(RandomBert, TheEmbedderLoadsItAsSpecified) {
  const fs::path dir = test::fresh_test_dir();
  RandomBertSpec spec;
  spec.n_layers = 3, spec.hidden = 48, spec.n_heads = 6, spec.intermediate = 80, spec.max_positions = 40;
  spec.max_seq_length = 16;
  write_random_bert(spec, dir.string());
  const auto e = SentenceEmbedder::load(dir.string(), cpu());
  const std::vector<std::string> vocab = random_bert_vocabulary(spec);
  EXPECT_EQ(e->dim(), 48);
  EXPECT_EQ(e->config().layers, 3);
  EXPECT_EQ(e->config().heads, 6);
  EXPECT_EQ(e->config().intermediate, 80);
  EXPECT_EQ(e->config().max_positions, 40);
  EXPECT_EQ(e->config().vocab_size, (int)vocab.size());
  EXPECT_EQ(e->max_length(), 16);
  EXPECT_EQ(e->pooling(), Pooling::Mean);
  EXPECT_EQ(e->tokenizer().vocab_size(), (int32_t)vocab.size());
  for (int32_t i = 0; i < (int32_t)vocab.size(); ++i) ASSERT_EQ(e->tokenizer().token(i), vocab[(size_t)i]);

  spec.pooling = "cls";
  spec.max_seq_length = 0;  // the position table's length
  write_random_bert(spec, (dir / "cls").string());
  const auto cls = SentenceEmbedder::load((dir / "cls").string(), cpu());
  EXPECT_EQ(cls->pooling(), Pooling::Cls);
  EXPECT_EQ(cls->max_length(), 40);
}

TEST(RandomBert, VocabularySpellsAsciiTextWithoutUnknownPieces) {
  const fs::path dir = test::fresh_test_dir();
  RandomBertSpec spec;
  spec.words = {"violin", "planet", "violin"};  // the repeat is skipped
  const std::vector<std::string> vocab = random_bert_vocabulary(spec);
  EXPECT_EQ(std::count(vocab.begin(), vocab.end(), "violin"), 1);
  EXPECT_EQ(vocab.back(), "planet");
  write_random_bert(spec, dir.string());
  const WordPieceTokenizer t = WordPieceTokenizer::load(dir.string());
  const int32_t unk = t.id("[UNK]");
  for (const auto& topic : test::kTopics) {
    const std::vector<int32_t> ids = t.tokenize(std::string(topic[0]) + ": " + topic[1] + " (#1, 50% & ~x_y@z)");
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(std::count(ids.begin(), ids.end(), unk), 0) << topic[1];
  }
  // Vocabulary words are one piece; other words are spelled by characters and "##" continuations.
  EXPECT_EQ(t.tokenize("Violin"), std::vector<int32_t>{t.id("violin")});
  EXPECT_EQ(t.tokenize("cello"), (std::vector<int32_t>{t.id("c"), t.id("##e"), t.id("##l"), t.id("##l"), t.id("##o")}));
  const std::vector<int32_t> accented = t.tokenize("naïve été");  // accents stripped, as lowercase BERT does
  EXPECT_EQ(std::count(accented.begin(), accented.end(), unk), 0);
  EXPECT_EQ(t.tokenize("日本"), (std::vector<int32_t>{unk, unk}));  // CJK split into characters, not in it

  RandomBertSpec bad;
  bad.words = {"two words"};
  EXPECT_THROW(random_bert_vocabulary(bad), Error);
}

TEST(RandomBert, SameSeedWritesTheSameFiles) {
  const fs::path dir = test::fresh_test_dir();
  RandomBertSpec spec;
  write_random_bert(spec, (dir / "a").string());
  write_random_bert(spec, (dir / "b").string());
  spec.seed = 8;
  write_random_bert(spec, (dir / "c").string());
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "a")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const fs::path rel = fs::relative(entry.path(), dir / "a");
    EXPECT_EQ(bytes_of(entry.path()), bytes_of(dir / "b" / rel)) << rel;
    if (rel == "model.safetensors")
      EXPECT_NE(bytes_of(entry.path()), bytes_of(dir / "c" / rel));
    else
      EXPECT_EQ(bytes_of(entry.path()), bytes_of(dir / "c" / rel)) << rel;  // only the weights depend on the seed
  }
  EXPECT_EQ(files, 7u);  // config, vocab, tokenizer config, sentence-bert config, modules, pooling, weights
  const auto a = SentenceEmbedder::load((dir / "a").string(), cpu());
  const auto b = SentenceEmbedder::load((dir / "b").string(), cpu());
  const auto c = SentenceEmbedder::load((dir / "c").string(), cpu());
  EXPECT_EQ(a->fingerprint(), b->fingerprint());
  EXPECT_NE(a->fingerprint(), c->fingerprint());
}

// The embeddings are unit vectors that depend on the text; texts sharing most words are nearer than texts on
// other topics (what makes a random embedder's retrieval and neighbours mean something in tests).
TEST(RandomBert, EmbeddingsAreUnitVectorsThatFollowTheWords) {
  const fs::path dir = test::fresh_test_dir();
  write_random_bert({}, dir.string());
  const auto e = SentenceEmbedder::load(dir.string(), cpu());
  const int d = e->dim();
  std::vector<std::string> texts, edited;
  for (const auto& topic : test::kTopics) {
    texts.push_back(topic[1]);
    std::string t = topic[1];
    t.insert(t.find(' '), " really");  // one word more after the first
    edited.push_back(t);
  }
  const std::vector<float> v = e->embed(texts, 5), w = e->embed(edited, 5);
  ASSERT_EQ(v.size(), texts.size() * d);
  const std::vector<float> again = e->embed({texts[3]});
  for (int i = 0; i < d; ++i) EXPECT_NEAR(again[(size_t)i], v[(size_t)(3 * d + i)], 1e-5f);  // batching aside
  size_t nearest_is_own = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_NEAR(dot(&v[i * d], &v[i * d], d), 1.0, 1e-4) << i;
    double best_other = -1;
    for (size_t j = 0; j < texts.size(); ++j) {
      if (j == i) continue;
      const double s = dot(&w[i * d], &v[j * d], d);
      EXPECT_LT(s, 0.9999) << i << " " << j;  // different texts, different vectors
      best_other = std::max(best_other, s);
    }
    nearest_is_own += dot(&w[i * d], &v[i * d], d) > best_other;
  }
  EXPECT_GE(nearest_is_own, texts.size() - 1);
}

TEST(RandomBert, ShapesTheLoaderWouldRefuseAreRefused) {
  const fs::path dir = test::fresh_test_dir();
  RandomBertSpec s;
  s.hidden = 30, s.n_heads = 4;
  EXPECT_THROW(write_random_bert(s, dir.string()), Error);
  s = {};
  s.pooling = "max";
  EXPECT_THROW(write_random_bert(s, dir.string()), Error);
  s = {};
  s.max_seq_length = s.max_positions + 1;
  EXPECT_THROW(write_random_bert(s, dir.string()), Error);
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
}

}  // namespace
}  // namespace kvf
