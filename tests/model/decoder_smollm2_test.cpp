// SmolLM2-135M-Instruct against llama.cpp (tests/fixtures/logits_smollm2.json, made by
// tests/reference/make_llama_fixtures.py), in both compute modes. Reference "f32" is llama.cpp over an F32 copy of
// the same dequantized weights: in the f32 mode the same math, so top-1 must agree everywhere and logits closely.
// Reference "q4_1" is llama.cpp on the original file, which also quantizes activations to 8 bits inside its
// matmuls: agreement is reported and bounded more loosely. The fast mode (Q4_1 weights kept, bf16 dot products)
// is held to both with bounds that fit its rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/decoder.h"
#include "model/generate.h"
#include "support/model_files.h"

namespace kvf {
namespace {

using nlohmann::json;

class SmolLM2VsLlamaCpp : public ::testing::TestWithParam<ComputeMode> {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(test::fixture_path("logits_smollm2.json"));
    ASSERT_TRUE(in) << "missing fixture " << test::fixture_path("logits_smollm2.json");
    fixture = new json(json::parse(in));
    backend = make_cpu_backend().release();
  }
  static void TearDownTestSuite() {
    delete decoder;
    delete backend;
    delete fixture;
  }
  void SetUp() override {  // one model at a time: a test of the other mode reloads it
    if (decoder && decoder->compute_mode() == GetParam()) return;
    delete decoder;
    decoder = Decoder::load_gguf(test::smollm2_gguf(), *backend, GetParam()).release();
  }
  bool f32_mode() const { return GetParam() == ComputeMode::F32; }

  struct Agreement {
    size_t positions = 0, top1_agree = 0;
    double max_diff = 0;  // largest |our logit - reference logit| over the reference's top-4 ids at every position
    double max_flip_margin = 0;  // largest lead of the reference's top-1 over its runner-up where top-1 differs
  };

  static Agreement compare(const std::vector<float>& logits, const json& ref, int vocab) {
    Agreement a;
    const auto& ids = ref["top_ids"];
    const auto& vals = ref["top_logits"];
    for (size_t i = 0; i < ids.size(); ++i, ++a.positions) {
      const float* row = logits.data() + i * vocab;
      if (argmax(row, vocab) == ids[i][0].get<int>())
        ++a.top1_agree;
      else
        a.max_flip_margin = std::max(a.max_flip_margin, vals[i][0].get<double>() - vals[i][1].get<double>());
      for (size_t j = 0; j < ids[i].size(); ++j)
        a.max_diff = std::max(a.max_diff, std::abs((double)row[ids[i][j].get<int>()] - vals[i][j].get<double>()));
    }
    return a;
  }

  static json* fixture;
  static Backend* backend;
  static Decoder* decoder;
};
json* SmolLM2VsLlamaCpp::fixture = nullptr;
Backend* SmolLM2VsLlamaCpp::backend = nullptr;
Decoder* SmolLM2VsLlamaCpp::decoder = nullptr;

TEST_P(SmolLM2VsLlamaCpp, LogitsAgreeAtEveryPosition) {
  const int vocab = decoder->config().vocab;
  size_t total = 0;
  for (const auto& prompt : (*fixture)["prompts"]) {
    ForwardRequest r;
    r.tokens = prompt["token_ids"].get<std::vector<int32_t>>();
    for (size_t i = 0; i < r.tokens.size(); ++i) {
      r.positions.push_back((int32_t)i);
      r.logit_rows.push_back((int32_t)i);
    }
    const ForwardResult out = decoder->forward(r);
    const Agreement f32 = compare(out.logits, prompt["refs"]["f32"], vocab);
    const Agreement q41 = compare(out.logits, prompt["refs"]["q4_1"], vocab);
    total += f32.positions;
    std::printf("  %-4s %-8s %4zu tokens | vs llama.cpp f32: top-1 %zu/%zu, max |dlogit| %.5f | vs llama.cpp q4_1: "
                "top-1 %zu/%zu, max |dlogit| %.4f\n",
                compute_mode_name(GetParam()), prompt["name"].get<std::string>().c_str(), r.tokens.size(), f32.top1_agree, f32.positions,
                f32.max_diff, q41.top1_agree, q41.positions, q41.max_diff);
    if (f32_mode()) {
      EXPECT_EQ(f32.top1_agree, f32.positions) << prompt["name"];
      EXPECT_LT(f32.max_diff, 0.002) << prompt["name"];
    } else {
      // bf16 rounding moves logits by up to a few tenths (measured: 0.33 at most), so top-1 may differ only
      // where the reference's top two are nearly tied (measured: 10 of 2,077 positions, leads <= 0.036).
      std::printf("       fast: top-1 differs from llama.cpp f32 only where its lead is <= %.3f\n", f32.max_flip_margin);
      EXPECT_LT(f32.max_diff, 0.5) << prompt["name"];
      EXPECT_LT(f32.max_flip_margin, 0.1) << prompt["name"];
      EXPECT_GE((double)f32.top1_agree, 0.99 * (double)f32.positions) << prompt["name"];
    }
    // Activation quantization in llama.cpp's Q4_1 path moves logits by a few tenths; the argmax rarely flips.
    EXPECT_GE((double)q41.top1_agree, 0.95 * (double)q41.positions) << prompt["name"];
    EXPECT_LT(q41.max_diff, 1.5) << prompt["name"];
  }
  EXPECT_GE(total, 2000u);  // the fixture covers five prompts up to ~1,000 tokens
}

TEST_P(SmolLM2VsLlamaCpp, GreedyContinuationsAreIdentical) {
  for (const auto& c : (*fixture)["continuations"]) {
    GreedyOptions opts;
    opts.max_new_tokens = 32;
    opts.is_end_token = [](int32_t id) { return id == 2; };  // <|im_end|>, as the fixture script stops
    const GreedyResult g = generate_greedy(*decoder, c["prompt_ids"].get<std::vector<int32_t>>(), opts);
    const auto f32 = c["refs"]["f32"].get<std::vector<int32_t>>();
    const auto q41 = c["refs"]["q4_1"].get<std::vector<int32_t>>();
    size_t same_prefix = 0;
    while (same_prefix < q41.size() && same_prefix < g.tokens.size() && q41[same_prefix] == g.tokens[same_prefix])
      ++same_prefix;
    std::printf("  %-4s %-10s %zu tokens: identical to llama.cpp f32: %s; common prefix with llama.cpp q4_1: %zu/%zu\n",
                compute_mode_name(GetParam()), c["name"].get<std::string>().c_str(), g.tokens.size(), g.tokens == f32 ? "yes" : "NO", same_prefix,
                q41.size());
    if (f32_mode())
      EXPECT_EQ(g.tokens, f32) << c["name"];
    else  // llama.cpp's own two computations disagree; the fast mode follows one of them to the last token
      EXPECT_TRUE(g.tokens == f32 || g.tokens == q41) << c["name"];
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SmolLM2VsLlamaCpp, ::testing::Values(ComputeMode::F32, ComputeMode::Fast),
                         [](const auto& info) { return std::string(compute_mode_name(info.param)); });

}  // namespace
}  // namespace kvf
