// Random-weight models of real shapes (io/random_model.h): the shape the GGUF says is the real model's, the
// weights are reproducible and spread as the spec asks, and a tokenizer travels alone.
#include "io/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <tuple>

#include "core/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/llama_config.h"
#include "support/temp_dir.h"

namespace kvf {
namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(RandomModel, RealShapesReadBackAsThoseModels) {
  const RandomModelSpec q7 = real_model_shape("qwen2.5-7b");  // the GPU benchmarks' shape, too big to write here
  EXPECT_EQ(std::make_tuple(q7.n_layers, q7.hidden, q7.n_heads, q7.n_kv_heads, q7.ffn, q7.vocab),
            std::make_tuple(28, 3584, 28, 4, 18944, 152064));
  const auto dir = test::fresh_test_dir();
  RandomModelSpec spec = real_model_shape("qwen2.5-0.5b");
  EXPECT_EQ(spec.n_layers, 24);
  spec.n_layers = 1;
  spec.vocab = 256;  // the real vocabulary would only make the file bigger
  const std::string path = (dir / "q05.gguf").string();
  write_random_model(spec, path);
  const auto file = gguf::File::open(path);
  const LlamaConfig c = llama_config_from_gguf(*file);
  EXPECT_EQ(c.arch, "qwen2");
  EXPECT_EQ(c.n_layers, 1);
  EXPECT_EQ(c.hidden, 896);
  EXPECT_EQ(c.n_heads, 14);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.ffn, 4864);
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(file->tensor("blk.0.ffn_down.weight").type, GgmlType::BF16);
  EXPECT_TRUE(file->find_tensor("blk.0.attn_k.bias"));
  for (const std::string& name : real_model_shape_names()) EXPECT_NO_THROW(real_model_shape(name)) << name;
  try {
    real_model_shape("gpt-5");
    FAIL() << "an unknown shape must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no shape named 'gpt-5'; known shapes: smollm2-135m"), std::string::npos);
  }
}

TEST(RandomModel, WeightsAreReproducibleAndSpreadAsAsked) {
  const auto dir = test::fresh_test_dir();
  RandomModelSpec spec;
  spec.hidden = 256, spec.ffn = 512, spec.vocab = 1000;
  write_random_model(spec, (dir / "a.gguf").string());
  write_random_model(spec, (dir / "b.gguf").string());
  spec.seed = 43;
  write_random_model(spec, (dir / "c.gguf").string());
  EXPECT_EQ(bytes_of((dir / "a.gguf").string()), bytes_of((dir / "b.gguf").string()));
  EXPECT_NE(bytes_of((dir / "a.gguf").string()), bytes_of((dir / "c.gguf").string()));

  // Matrices: mean 0, standard deviation 1.5 / sqrt(columns); norms: mean 1, deviation 0.1.
  const auto file = gguf::File::open((dir / "a.gguf").string());
  const auto moments = [&](const std::string& name) {
    const gguf::TensorInfo& t = file->tensor(name);
    const auto* v = reinterpret_cast<const float*>(file->tensor_data(t));
    const int64_t n = (int64_t)t.n_elements;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) sum += v[i], sq += (double)v[i] * v[i];
    const double mean = sum / n;
    return std::make_pair(mean, std::sqrt(sq / n - mean * mean));
  };
  const auto [m_mean, m_sd] = moments("blk.0.ffn_down.weight");  // 256 rows of 512
  EXPECT_NEAR(m_mean, 0.0, 0.002);
  EXPECT_NEAR(m_sd, 1.5 / std::sqrt(512.0), 0.002);
  const auto [n_mean, n_sd] = moments("blk.1.attn_norm.weight");
  EXPECT_NEAR(n_mean, 1.0, 0.03);
  EXPECT_NEAR(n_sd, 0.1, 0.02);
  EXPECT_NE(moments("blk.0.attn_q.weight").first, moments("blk.1.attn_q.weight").first) << "one stream per tensor";
}

TEST(RandomModel, ATokenizerTravelsAloneAndSetsTheVocabulary) {
  const auto dir = test::fresh_test_dir();
  const std::string source = (dir / "source.gguf").string(), tokenizer = (dir / "tokenizer.gguf").string();
  gguf::Writer w;
  w.add_string("general.architecture", "llama");
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "ab", "<|end|>"});
  w.write(source);
  write_tokenizer_only(source, tokenizer);
  const auto only = gguf::File::open(tokenizer);
  EXPECT_TRUE(only->tensors().empty());
  EXPECT_FALSE(only->has("general.architecture"));
  EXPECT_EQ(only->get_string_array("tokenizer.ggml.tokens").size(), 5u);

  RandomModelSpec spec;
  spec.tokenizer_from = tokenizer;
  const std::string model = (dir / "model.gguf").string();
  write_random_model(spec, model);
  const auto m = gguf::File::open(model);
  EXPECT_EQ(m->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(m->tensor("token_embd.weight").ne[1], 5);

  EXPECT_THROW(write_tokenizer_only(model + ".missing", tokenizer), Error);
  gguf::Writer bare;
  bare.add_string("general.architecture", "llama");
  bare.write((dir / "bare.gguf").string());
  try {
    write_tokenizer_only((dir / "bare.gguf").string(), tokenizer);
    FAIL() << "a GGUF without a tokenizer must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bare.gguf: no tokenizer.* metadata to copy"), std::string::npos);
  }
}

}  // namespace
}  // namespace kvf
