// Each decoder preset against llama.cpp (tests/fixtures/logits_<preset>.json, made by
// tests/reference/make_llama_fixtures.py). Reference "f32" is llama.cpp over an F32 copy of the same dequantized
// weights: same math, so top-1 must agree everywhere and logits closely. The second reference is llama.cpp on the
// original file ("q4_1" for SmolLM2, "q4_k_m" for Qwen2.5-Coder), which also quantizes activations to 8 bits
// inside its matmuls: agreement is reported and bounded more loosely. Both compute modes run: the f32 mode is held
// to the f32 reference as above; the fast mode (weights kept as stored, bf16 dot products) to bounds that fit its
// rounding: top-1 may differ only where the reference's top two are nearly tied, and a greedy continuation must
// equal one of llama.cpp's two.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "support/model_files.h"

namespace kvf {
namespace {

using nlohmann::json;

struct DecoderCase {
  std::string preset;
  std::string quant;        // the fixture's reference over the file's own weights
  double f32_max_diff;      // bound on |our logit - llama.cpp f32| at the reference's top-4 ids, every position
  double quant_top1;        // least share of positions whose top-1 agrees with the quantized reference
  double quant_max_diff;    // bound on |our logit - llama.cpp quantized| likewise, from position quant_from on
  size_t quant_from;        // the first positions' huge activations (attention sinks) defeat 8-bit activations
  size_t min_positions;     // the fixture's five prompts hold at least this many tokens (up to ~1,000 each)
  bool optional;            // skipped unless installed (make test does not fetch it)
  double fast_max_diff;     // fast mode: bound on |our logit - llama.cpp f32|
};

class DecoderVsLlamaCpp : public ::testing::TestWithParam<std::tuple<DecoderCase, ComputeMode>> {
 protected:
  const DecoderCase& param() const { return std::get<0>(GetParam()); }
  bool fast() const { return std::get<1>(GetParam()) == ComputeMode::Fast; }

  void SetUp() override {
    const DecoderCase& c = param();
    if (c.optional && !test::preset_installed(c.preset))
      GTEST_SKIP() << c.preset << " is not installed (scripts/setup.sh " << c.preset << ")";
    static std::map<std::string, std::pair<json, std::unique_ptr<Decoder>>> loaded;
    static const std::unique_ptr<Backend> backend = make_cpu_backend();
    auto& [fixture, decoder] = loaded[c.preset + compute_mode_name(std::get<1>(GetParam()))];
    if (!decoder) {
      fixture = read_json_file(test::fixture_path("logits_" + c.preset + ".json"));
      decoder = Decoder::load(resolve_model(c.preset), *backend, std::get<1>(GetParam()));
    }
    fixture_ = &fixture;
    decoder_ = decoder.get();
  }

  struct Agreement {
    size_t positions = 0, top1_agree = 0;
    double max_diff = 0;  // largest |our logit - reference logit| over the reference's top-4 ids at each position
                          // from `from` on
    double max_flip_lead = 0;  // largest lead of the reference's top-1 over its runner-up where top-1 differs
  };

  static Agreement compare(const std::vector<float>& logits, const json& ref, int vocab, size_t from = 0) {
    Agreement a;
    const auto& ids = ref["top_ids"];
    const auto& vals = ref["top_logits"];
    for (size_t i = 0; i < ids.size(); ++i, ++a.positions) {
      const float* row = logits.data() + i * vocab;
      if (argmax(row, vocab) == ids[i][0].get<int>())
        ++a.top1_agree;
      else
        a.max_flip_lead = std::max(a.max_flip_lead, vals[i][0].get<double>() - vals[i][1].get<double>());
      for (size_t j = 0; i >= from && j < ids[i].size(); ++j)
        a.max_diff = std::max(a.max_diff, std::abs((double)row[ids[i][j].get<int>()] - vals[i][j].get<double>()));
    }
    return a;
  }

  const json* fixture_ = nullptr;
  const Decoder* decoder_ = nullptr;
};

TEST_P(DecoderVsLlamaCpp, LogitsAgreeAtEveryPosition) {
  const DecoderCase& c = param();
  const int vocab = decoder_->config().vocab;
  size_t total = 0, agree = 0;
  double worst = 0;
  for (const auto& prompt : (*fixture_)["prompts"]) {
    ForwardRequest r;
    r.tokens = prompt["token_ids"].get<std::vector<int32_t>>();
    for (size_t i = 0; i < r.tokens.size(); ++i) {
      r.positions.push_back((int32_t)i);
      r.logit_rows.push_back((int32_t)i);
    }
    const ForwardResult out = decoder_->forward(r);
    const Agreement f32 = compare(out.logits, prompt["refs"]["f32"], vocab);
    const Agreement quant = compare(out.logits, prompt["refs"][c.quant], vocab, c.quant_from);
    total += f32.positions;
    agree += f32.top1_agree;
    worst = std::max(worst, f32.max_diff);
    std::printf("  %-8s %4zu tokens | vs llama.cpp f32: top-1 %zu/%zu, max |dlogit| %.5f | vs llama.cpp %s: "
                "top-1 %zu/%zu, max |dlogit| %.4f from position %zu\n",
                prompt["name"].get<std::string>().c_str(), r.tokens.size(), f32.top1_agree, f32.positions,
                f32.max_diff, c.quant.c_str(), quant.top1_agree, quant.positions, quant.max_diff, c.quant_from);
    if (fast()) {
      std::printf("    fast: top-1 differs from llama.cpp f32 only where its lead is <= %.3f\n", f32.max_flip_lead);
      EXPECT_LT(f32.max_diff, c.fast_max_diff) << prompt["name"];
      EXPECT_LT(f32.max_flip_lead, 0.1) << prompt["name"];  // every disagreement is a near-tie ...
    } else {
      EXPECT_EQ(f32.top1_agree, f32.positions) << prompt["name"];
      EXPECT_LT(f32.max_diff, c.f32_max_diff) << prompt["name"];
    }
    // Activation quantization in llama.cpp's quantized path moves logits by a few tenths; the argmax rarely flips.
    EXPECT_GE((double)quant.top1_agree, c.quant_top1 * (double)quant.positions) << prompt["name"];
    EXPECT_LT(quant.max_diff, c.quant_max_diff) << prompt["name"];
  }
  std::printf("  %s: largest |dlogit| against llama.cpp f32 over %zu positions: %.5f; top-1 agrees at %zu\n",
              c.preset.c_str(), total, worst, agree);
  // ... and there are few of them over all prompts (a 25-token prompt cannot hold 2% by itself).
  if (fast()) {
    EXPECT_GE((double)agree, 0.98 * (double)total);
  }
  EXPECT_EQ((*fixture_)["prompts"].size(), 5u);
  EXPECT_GE(total, c.min_positions);
}

TEST_P(DecoderVsLlamaCpp, GreedyContinuationsAreIdentical) {
  const DecoderCase& c = param();
  const int32_t end_of_turn = (*fixture_)["end_of_turn_id"].get<int32_t>();  // <|im_end|>, as the script stops
  for (const auto& cont : (*fixture_)["continuations"]) {
    GreedyOptions opts;
    opts.max_new_tokens = 32;
    opts.is_end_token = [end_of_turn](int32_t id) { return id == end_of_turn; };
    const GreedyResult g = generate_greedy(*decoder_, cont["prompt_ids"].get<std::vector<int32_t>>(), opts);
    const auto f32 = cont["refs"]["f32"].get<std::vector<int32_t>>();
    const auto quant = cont["refs"][c.quant].get<std::vector<int32_t>>();
    size_t same_prefix = 0;
    while (same_prefix < quant.size() && same_prefix < g.tokens.size() && quant[same_prefix] == g.tokens[same_prefix])
      ++same_prefix;
    std::printf("  %-10s %zu tokens: identical to llama.cpp f32: %s; common prefix with llama.cpp %s: %zu/%zu\n",
                cont["name"].get<std::string>().c_str(), g.tokens.size(), g.tokens == f32 ? "yes" : "NO",
                c.quant.c_str(), same_prefix, quant.size());
    if (fast())  // llama.cpp's own two computations may disagree; the fast mode follows one of them to the end
      EXPECT_TRUE(g.tokens == f32 || g.tokens == quant) << cont["name"];
    else
      EXPECT_EQ(g.tokens, f32) << cont["name"];
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, DecoderVsLlamaCpp,
                         ::testing::Combine(::testing::Values(DecoderCase{"smollm2", "q4_1", 0.002, 0.95, 1.5, 0, 2000, false, 0.5},
                                           // Qwen's tokenizer makes fewer tokens of the same texts; on the
                                           // 25-token prompt llama.cpp's own f32 and q4_k_m disagree at 2. In
                                           // the 1.5B model llama.cpp's q4_k_m logits at the first two positions
                                           // are off by up to 15 (its f32 and q4_k_m references too), 0.35 after.
                                           DecoderCase{"qwen0.5b", "q4_k_m", 0.002, 0.9, 1.0, 0, 1900, false, 1.0},
                                           DecoderCase{"qwen1.5b", "q4_k_m", 0.002, 0.9, 1.0, 2, 1900, true, 1.0}),
                                           ::testing::Values(ComputeMode::F32, ComputeMode::Fast)),
                         [](const auto& param_info) {
                           return test::preset_test_name(std::get<0>(param_info.param).preset) + "_" +
                                  compute_mode_name(std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace kvf
