// RoPE scaling kinds on tiny random models: kvfuse's logits against llama.cpp's on the same files
// (tests/fixtures/rope/logits.json, made by tests/reference/make_rope_fixtures.py), for no scaling, linear,
// llama3's per-frequency factors (a rope_freqs tensor) and YaRN in both pairings; YaRN's frequencies and
// magnitude; RoPE removed and re-applied under YaRN; a sliding window caps the context.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <unistd.h>

#include "core/json_file.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/hf_config.h"
#include "io/gguf.h"
#include "model/decoder.h"
#include "model/llama_config.h"
#include "model/rope_frequencies.h"
#include "support/model_files.h"
#include "support/test_values.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using nlohmann::json;
using test::max_abs_diff;

// Largest |kvfuse - llama.cpp| logit allowed: the bound tests/model/decoder_vs_llamacpp_test.cpp uses for the f32
// engine against llama.cpp over F32 files.
constexpr double kLogitTolerance = 0.002;

// The models of the fixture, by name. make_rope_fixtures.py has the unit test binary write them (KVF_ROPE_MODELS_OUT).
std::vector<std::pair<std::string, RandomModelSpec>> rope_models() {
  auto base = [](const std::string& arch) {
    RandomModelSpec s;
    s.arch = arch;
    s.n_layers = 2;
    s.hidden = 128;  // 4 heads of 32: 16 frequencies
    s.n_heads = 4;
    s.n_kv_heads = 2;
    s.ffn = 192;
    s.vocab = 320;
    s.context = 512;
    s.seed = 59;
    s.placeholder_vocab = true;
    return s;
  };
  std::vector<std::pair<std::string, RandomModelSpec>> m;
  m.emplace_back("none", base("llama"));
  RandomModelSpec linear = base("llama");
  linear.rope_scaling = "linear", linear.rope_scaling_factor = 4.0f;
  m.emplace_back("linear", linear);
  // llama3: Llama 3.1's rule (factor 8, low 1, high 4) over an original context of 64 positions.
  RandomModelSpec llama3 = base("llama");
  for (int i = 0; i < 16; ++i) {
    const double wavelen = 2 * M_PI * std::pow(10000.0, 2.0 * i / 32.0), low = 64.0 / 1.0, high = 64.0 / 4.0;
    const double smooth = (64.0 / wavelen - 1.0) / (4.0 - 1.0);
    llama3.rope_freq_factors.push_back(wavelen < high  ? 1.0f
                                       : wavelen > low ? 8.0f
                                                       : (float)(1.0 / ((1 - smooth) / 8.0 + smooth)));
  }
  m.emplace_back("llama3", llama3);
  RandomModelSpec yarn = base("llama");
  yarn.rope_scaling = "yarn", yarn.rope_scaling_factor = 4.0f, yarn.rope_original_context = 128;
  m.emplace_back("yarn", yarn);
  RandomModelSpec yarn_qwen = base("qwen2");  // half-split pairing, Qwen2.5's theta, no original_context_length key
  yarn_qwen.rope_theta = 1000000.0f, yarn_qwen.context = 256;
  yarn_qwen.rope_scaling = "yarn", yarn_qwen.rope_scaling_factor = 4.0f;
  m.emplace_back("yarn_qwen2", yarn_qwen);
  return m;
}

TEST(RopeScaling, WritesTheFixtureModelsWhenAsked) {
  const char* out = std::getenv("KVF_ROPE_MODELS_OUT");
  if (!out) GTEST_SKIP() << "KVF_ROPE_MODELS_OUT unset (tests/reference/make_rope_fixtures.py sets it)";
  std::filesystem::create_directories(out);
  for (const auto& [name, spec] : rope_models()) write_random_model(spec, std::string(out) + "/" + name + ".gguf");
}

TEST(RopeScaling, LogitsMatchLlamaCppOnTheSameFiles) {
  const json fixture = read_json_file(test::fixture_path("rope/logits.json"));
  const auto models = rope_models();
  ASSERT_EQ(fixture["models"].size(), models.size());
  auto backend = make_cpu_backend();
  for (const auto& [name, spec] : models) {
    SCOPED_TRACE(name);
    const json& ref = fixture["models"][name];
    const std::string path = test::write_tiny_model(spec);
    ASSERT_EQ(sha256_file(path), ref["sha256"].get<std::string>()) << "the model differs from the fixture's file";
    auto decoder = Decoder::load(path, *backend, ComputeMode::F32);
    EXPECT_EQ(decoder->config().rope_scaling, ref["scaling"].get<std::string>());
    const int vocab = decoder->config().vocab;
    ForwardRequest r;
    r.tokens = ref["token_ids"].get<std::vector<int32_t>>();
    r.positions = test::iota_positions((int)r.tokens.size(), 0);
    r.logit_rows = ref["positions"].get<std::vector<int32_t>>();
    const ForwardResult out = decoder->forward(r);
    const std::vector<float> expected = ref["logits"].get<std::vector<float>>();
    ASSERT_EQ(out.logits.size(), expected.size());
    ASSERT_EQ(expected.size(), r.logit_rows.size() * (size_t)vocab);
    const double diff = max_abs_diff(out.logits, expected);
    EXPECT_LT(diff, kLogitTolerance);
    std::printf("[ rope %-10s ] largest |kvfuse - llama.cpp| logit difference %.6f\n", name.c_str(), diff);
    std::filesystem::remove(path);
  }
}

TEST(RopeScaling, YarnFrequenciesRampFromExtrapolatedToInterpolated) {
  YarnScaling y;
  y.factor = 4.0, y.original_context = 128;
  float dims[2];
  rope_yarn_correction_dims(32, 10000.0, y, dims);
  EXPECT_EQ(dims[0], 0.0f);
  EXPECT_EQ(dims[1], 6.0f);  // ceil(32 ln(128 / 2π) / (2 ln 10000)) = ceil(5.24)
  const auto plain = rope_inv_frequencies(32, 10000.0, 1.0, {});
  const auto yarn = rope_yarn_inv_frequencies(32, 10000.0, y, {});
  EXPECT_EQ(yarn[0], plain[0]);                            // below the ramp: extrapolated
  EXPECT_FLOAT_EQ(yarn[15], plain[15] / 4.0f);             // past it: interpolated
  EXPECT_GT(yarn[3], plain[3] / 4.0f);
  EXPECT_LT(yarn[3], plain[3]);
  EXPECT_FLOAT_EQ(rope_yarn_magnitude(y), 1.0f + 0.1f * std::log(4.0f));
  EXPECT_FLOAT_EQ(rope_yarn_magnitude(YarnScaling{}), 1.0f);
}

TEST(RopeScaling, YarnRopeRemovedThenReappliedEqualsRopeAtTheNewPosition) {
  RandomModelSpec spec = rope_models()[3].second;
  ASSERT_EQ(spec.rope_scaling, "yarn");
  const std::string path = test::write_tiny_model(spec);
  auto backend = make_cpu_backend();
  auto decoder = Decoder::load(path, *backend, ComputeMode::F32);
  const RopeSpec& rope = decoder->rope();
  EXPECT_GT(rope.attn_factor, 1.1f);
  const auto& c = decoder->config();
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  const int n = 9;
  std::vector<float> x((size_t)n * c.n_kv_heads * c.head_dim);
  for (float& v : x) v = d(rng);
  auto rotate = [&](const std::vector<float>& data, const std::vector<int32_t>& pos, bool inverse) {
    Tensor t = backend->empty(DType::F32, {n, c.n_kv_heads, c.head_dim});
    backend->copy_from_host(t, data.data(), data.size() * 4);
    Tensor p = backend->empty(DType::I32, {n});
    backend->copy_from_host(p, pos.data(), pos.size() * 4);
    backend->rope_inplace(t, p, rope, inverse);
    std::vector<float> v(t.numel());
    backend->copy_to_host(t, v.data(), v.size() * 4);
    return v;
  };
  // Positions inside the cos/sin table (context 512) and past it (computed from inv_freq): both scaled alike.
  const std::vector<int32_t> p1{0, 1, 5, 17, 100, 255, 300, 700, 5000}, p2{3, 9, 2, 0, 460, 77, 12, 511, 600};
  const auto moved = rotate(rotate(rotate(x, p1, false), p1, true), p2, false);
  EXPECT_LT(max_abs_diff(moved, rotate(x, p2, false)), 2e-5);
  EXPECT_LT(max_abs_diff(rotate(rotate(x, p1, false), p1, true), x), 2e-5);
  // The magnitude reaches every rotated row: norms grow by attn_factor, in the table and past it.
  const auto rotated = rotate(x, p1, false);
  for (int r = 0; r < n; ++r) {
    double a = 0, b = 0;
    for (int i = 0; i < c.head_dim; ++i) {  // head 0's rotary dims are all of them here
      a += (double)x[(size_t)r * c.n_kv_heads * c.head_dim + i] * x[(size_t)r * c.n_kv_heads * c.head_dim + i];
      b += (double)rotated[(size_t)r * c.n_kv_heads * c.head_dim + i] *
           rotated[(size_t)r * c.n_kv_heads * c.head_dim + i];
    }
    EXPECT_NEAR(std::sqrt(b / a), rope.attn_factor, 1e-4) << "position " << p1[r];
  }
  std::filesystem::remove(path);
}

TEST(RopeScaling, UnscaledModelsKeepUnitMagnitude) {
  const std::string path = test::write_tiny_model(rope_models()[0].second);
  auto backend = make_cpu_backend();
  auto decoder = Decoder::load(path, *backend, ComputeMode::F32);
  EXPECT_EQ(decoder->rope().attn_factor, 1.0f);
  EXPECT_EQ(decoder->config().sliding_window, 0);
  std::filesystem::remove(path);
}

TEST(RopeScaling, SlidingWindowCapsTheContext) {
  RandomModelSpec spec = rope_models()[0].second;
  spec.sliding_window = 96;
  const std::string path = test::write_tiny_model(spec);
  const LlamaConfig c = llama_config_from_gguf(*gguf::File::open(path));
  EXPECT_EQ(c.sliding_window, 96);
  EXPECT_EQ(c.context_length, 96);  // a query never reaches past the window, where windowed attention differs
  std::filesystem::remove(path);
}

TEST(RopeScaling, HfYarnConfigBecomesLlamaCppMetadata) {
  const auto dir = std::filesystem::temp_directory_path() / ("kvfuse-rope-hf-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  json j = {{"model_type", "qwen2"},          {"num_hidden_layers", 2},      {"hidden_size", 128},
            {"num_attention_heads", 4},       {"num_key_value_heads", 2},    {"intermediate_size", 192},
            {"vocab_size", 320},              {"max_position_embeddings", 32768},
            {"rope_theta", 1000000.0},        {"rms_norm_eps", 1e-6}};
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  std::ofstream(path) << j.dump();
  const HfDecoderConfig c = read_hf_config(path);
  EXPECT_EQ(c.rope_scaling, "yarn");
  std::map<std::string, gguf::Value> kv;
  add_hf_config_metadata(c, kv);
  EXPECT_EQ(kv.at("qwen2.rope.scaling.type").s, "yarn");
  EXPECT_EQ(kv.at("qwen2.rope.scaling.factor").f, 4.0);
  EXPECT_EQ(kv.at("qwen2.rope.scaling.original_context_length").i, 32768);
  j["rope_scaling"]["beta_fast"] = 16;
  std::ofstream(path) << j.dump();
  EXPECT_THROW(read_hf_config(path), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvf
