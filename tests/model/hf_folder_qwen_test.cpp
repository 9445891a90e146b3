// Qwen2.5-Coder-0.5B as a Hugging Face folder (qwen0.5b-hf: the qwen0.5b GGUF dequantized to F32 safetensors and
// its vocabulary written as tokenizer.json by tests/reference/gguf_to_hf.py) against the GGUF itself: the same
// vocabulary, token ids equal to Hugging Face `tokenizers` on the committed fixture texts (the folder's
// hf_tokens.json) and to llama.cpp's where NFC leaves the text alone, the same chat prompt, the same logits up to
// rounding and the same greedy continuations, in the f32 compute mode where both hold identical weights.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/json_file.h"
#include "io/hf_folder.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "support/model_files.h"

namespace kvf {
namespace {

using nlohmann::json;

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

class HfFolderQwen : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::preset_installed("qwen0.5b-hf"))
      GTEST_SKIP() << "qwen0.5b-hf is not installed (scripts/setup.sh qwen0.5b-hf)";
    dir_ = resolve_model("qwen0.5b-hf");
  }
  std::string dir_;
};

TEST_F(HfFolderQwen, SameVocabularyAndTokens) {
  const BpeTokenizer folder(bpe_vocabulary_from_gguf(*open_decoder_file(dir_)));
  const BpeTokenizer& gguf = test::decoder_tokenizer("qwen0.5b");
  const BpeVocabulary &a = folder.vocabulary(), &b = gguf.vocabulary();
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.token_types, b.token_types);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.pre, b.pre);
  EXPECT_EQ(std::tie(a.bos_id, a.eos_id, a.pad_id, a.add_bos), std::tie(b.bos_id, b.eos_id, b.pad_id, b.add_bos));
  for (int32_t id = 0; id < folder.vocab_size(); ++id) ASSERT_EQ(folder.is_eog(id), gguf.is_eog(id)) << id;

  // Hugging Face `tokenizers` over the folder's tokenizer.json (which splits special tokens out of text and, as
  // Qwen2's published one, normalizes the rest to NFC).
  const json hf_tokens = read_json_file(dir_ + "/hf_tokens.json");
  std::set<std::string> nfc_stable;
  int hf_compared = 0;
  for (const json& c : hf_tokens["cases"]) {
    EXPECT_EQ(folder.encode(c["text"].get<std::string>(), false, true), ids_of(c["ids"])) << c["text"];
    if (c["nfc_stable"].get<bool>()) nfc_stable.insert(c["text"].get<std::string>());
    ++hf_compared;
  }
  // The committed llama.cpp fixture (no normalizer: only texts NFC leaves alone), with and without special-token
  // parsing.
  const json fixture = read_json_file(test::fixture_path("tokens_qwen0.5b.json"));
  int compared = 0;
  for (const json& c : fixture["cases"]) {
    if (!c.contains("text") || !nfc_stable.count(c["text"].get<std::string>())) continue;
    const std::string text = c["text"];
    EXPECT_EQ(folder.encode(text, false, false), ids_of(c["ids"])) << text;
    EXPECT_EQ(folder.encode(text, false, true), ids_of(c.value("ids_special", c["ids"]))) << text;
    ++compared;
  }
  std::printf(
      "tokens: %d fixture texts equal to Hugging Face tokenizers', %d (those NFC leaves alone) to "
      "llama.cpp's\n",
      hf_compared, compared);
  EXPECT_GT(compared, 200);
  EXPECT_GT(hf_compared, compared);  // the fixture holds texts that NFC changes
  const ChatTemplate chat_folder = chat_template_from_gguf(*open_decoder_file(dir_));
  const ChatTemplate chat_gguf = chat_template_from_gguf(*test::decoder_file("qwen0.5b"));
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "What is a KV cache?"}};
  EXPECT_EQ(chat_folder.render(messages, true), chat_gguf.render(messages, true));
}

TEST_F(HfFolderQwen, SameLogitsAndGreedyAnswers) {
  const auto backend = make_cpu_backend();
  const auto folder = Decoder::load(dir_, *backend, ComputeMode::F32);
  const auto gguf = Decoder::load(resolve_model("qwen0.5b"), *backend, ComputeMode::F32);
  const json fixture = read_json_file(test::fixture_path("logits_qwen0.5b.json"));
  double max_diff = 0;
  int positions = 0;
  for (const json& p : fixture["prompts"]) {
    std::vector<int32_t> ids = ids_of(p["token_ids"]);
    ids.resize(std::min<size_t>(ids.size(), 200));  // enough positions; the whole prompts add only time
    ForwardRequest r;
    r.tokens = ids;
    for (int32_t i = 0; i < (int32_t)ids.size(); ++i) {
      r.positions.push_back(i);
      r.logit_rows.push_back(i);
    }
    const ForwardResult a = folder->forward(r), b = gguf->forward(r);
    const int64_t vocab = folder->config().vocab;
    for (size_t row = 0; row < ids.size(); ++row) {
      const float* la = a.logits.data() + row * vocab;
      const float* lb = b.logits.data() + row * vocab;
      EXPECT_EQ(argmax(la, vocab), argmax(lb, vocab)) << p["name"] << " position " << row;
      for (int64_t v = 0; v < vocab; ++v) max_diff = std::max(max_diff, (double)std::fabs(la[v] - lb[v]));
      ++positions;
    }
  }
  std::printf("logits: max |folder - gguf| = %.3g over %d positions x %lld ids\n", max_diff, positions,
              (long long)folder->config().vocab);
  EXPECT_LT(max_diff, 1e-3);

  const BpeTokenizer& tokenizer = test::decoder_tokenizer("qwen0.5b");
  GreedyOptions options;
  options.max_new_tokens = 24;
  options.is_end_token = [&](int32_t id) { return tokenizer.is_eog(id); };
  for (const json& c : fixture["continuations"]) {
    const std::vector<int32_t> prompt = ids_of(c["prompt_ids"]);
    const GreedyResult a = generate_greedy(*folder, prompt, options), b = generate_greedy(*gguf, prompt, options);
    EXPECT_EQ(a.tokens, b.tokens) << c["name"];
    std::printf("greedy %s: %s\n", c["name"].get<std::string>().c_str(), tokenizer.decode(a.tokens).c_str());
  }
}

}  // namespace
}  // namespace kvf
