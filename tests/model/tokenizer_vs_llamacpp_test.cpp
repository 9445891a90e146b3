// Each decoder preset's tokenizer and chat template against llama.cpp and jinja2 (tests/fixtures/tokens_<preset>.json,
// written by tests/reference/make_token_fixtures.py): SmolLM2 (smollm pre-tokenizer) and Qwen2.5-Coder (qwen2).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "io/gguf.h"
#include "model/gguf_tokenizer.h"
#include "support/model_files.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"

namespace kvf {
namespace {

using nlohmann::json;

struct TokenizerCase {
  std::string preset;
  std::string default_system;  // the system message the template inserts when a conversation has none
  bool optional;               // skipped unless installed (make test does not fetch it)
};

class TokenizerVsLlamaCpp : public ::testing::TestWithParam<TokenizerCase> {
 protected:
  void SetUp() override {
    if (GetParam().optional && !test::preset_installed(GetParam().preset))
      GTEST_SKIP() << GetParam().preset << " is not installed (scripts/setup.sh " << GetParam().preset << ")";
  }
  const json& fixture() const {
    static std::map<std::string, json> loaded;
    const std::string name = "tokens_" + GetParam().preset + ".json";
    if (!loaded.count(name)) loaded[name] = read_json_file(test::fixture_path(name));
    return loaded[name];
  }
  const BpeTokenizer& tokenizer() const { return test::decoder_tokenizer(GetParam().preset); }
};

// A fixture string: "key" holds UTF-8 text, "key_hex" bytes that are not.
std::string bytes_of(const json& record, const std::string& key) {
  if (record.contains(key)) return record.at(key).get<std::string>();
  const std::string hex = record.at(key + "_hex").get<std::string>();
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += (char)std::stoi(hex.substr(i, 2), nullptr, 16);
  return bytes;
}

std::vector<int32_t> ids_of(const json& value) { return value.get<std::vector<int32_t>>(); }

TEST_P(TokenizerVsLlamaCpp, VocabularyMatchesLlamaCpp) {
  const json& vocab = fixture().at("vocab");
  const BpeTokenizer& tok = tokenizer();
  EXPECT_EQ(tok.vocab_size(), vocab.at("n_tokens").get<int32_t>());
  EXPECT_EQ(tok.bos(), vocab.at("bos").get<int32_t>());
  EXPECT_EQ(tok.eos(), vocab.at("eos").get<int32_t>());
  EXPECT_EQ(tok.vocabulary().add_bos, vocab.at("add_bos").get<bool>());
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.is_eog(id)) eog.push_back(id);
  }
  EXPECT_EQ(eog, ids_of(vocab.at("eog")));
}

TEST_P(TokenizerVsLlamaCpp, EncodeMatchesLlamaCpp) {
  const BpeTokenizer& tok = tokenizer();
  int compared = 0;
  for (const json& c : fixture().at("cases")) {
    const std::string text = bytes_of(c, "text");
    SCOPED_TRACE(::testing::Message() << "text: '" << text << "'");
    const std::vector<int32_t> ids = ids_of(c.at("ids"));
    EXPECT_EQ(tok.encode(text, false, false), ids);
    EXPECT_EQ(tok.encode(text, false, true), c.contains("ids_special") ? ids_of(c.at("ids_special")) : ids);
    ++compared;
  }
  EXPECT_GE(compared, 150);
}

TEST_P(TokenizerVsLlamaCpp, DecodeMatchesLlamaCpp) {
  const BpeTokenizer& tok = tokenizer();
  for (const json& c : fixture().at("cases")) {
    SCOPED_TRACE(::testing::Message() << "text: '" << bytes_of(c, "text") << "'");
    EXPECT_EQ(tok.decode(ids_of(c.at("ids"))), bytes_of(c, "decoded"));
    if (!c.contains("ids_special")) continue;
    const std::vector<int32_t> ids = ids_of(c.at("ids_special"));
    EXPECT_EQ(tok.decode(ids), bytes_of(c, "decoded_special"));
    EXPECT_EQ(tok.decode(ids, true), bytes_of(c, "decoded_skip_special"));
  }
}

TEST_P(TokenizerVsLlamaCpp, ChatTemplateRendersLikeJinja) {
  const ChatTemplate chat = chat_template_from_gguf(*test::decoder_file(GetParam().preset));
  EXPECT_EQ(chat.style(), ChatTemplate::Style::ChatML);
  EXPECT_EQ(chat.default_system(), GetParam().default_system);
  EXPECT_EQ(chat.note(), "");
  for (const json& c : fixture().at("chats")) {
    std::vector<ChatMessage> messages;
    for (const json& m : c.at("messages")) {
      messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    }
    const std::string rendered = chat.render(messages, c.at("add_generation_prompt").get<bool>());
    EXPECT_EQ(rendered, c.at("rendered").get<std::string>());
    EXPECT_EQ(tokenizer().encode(rendered, false, true), ids_of(c.at("ids")));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Presets, TokenizerVsLlamaCpp,
    ::testing::Values(
        TokenizerCase{"smollm2", "You are a helpful AI assistant named SmolLM, trained by Hugging Face", false},
        TokenizerCase{"qwen0.5b", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", false},
        TokenizerCase{"qwen1.5b", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", true}),
    [](const ::testing::TestParamInfo<TokenizerCase>& param_info) { return test::preset_test_name(param_info.param.preset); });

}  // namespace
}  // namespace kvf
