// The SmolLM2 tokenizer and chat template against llama.cpp and jinja2 (tests/fixtures/tokens_smollm2.json,
// written by tests/reference/make_token_fixtures.py).
#include <gtest/gtest.h>


#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "model/gguf_tokenizer.h"
#include "support/model_files.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"

namespace kvf {
namespace {

using nlohmann::json;

const json& fixture() {
  static const json data = [] {
    std::ifstream in(test::fixture_path("tokens_smollm2.json"));
    EXPECT_TRUE(in) << "missing fixture " << test::fixture_path("tokens_smollm2.json");
    return json::parse(in);
  }();
  return data;
}

const std::shared_ptr<const gguf::File>& model_file() { return test::smollm2_file(); }
const BpeTokenizer& tokenizer() { return test::smollm2_tokenizer(); }

// A fixture string: "key" holds UTF-8 text, "key_hex" bytes that are not.
std::string bytes_of(const json& record, const std::string& key) {
  if (record.contains(key)) return record.at(key).get<std::string>();
  const std::string hex = record.at(key + "_hex").get<std::string>();
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += (char)std::stoi(hex.substr(i, 2), nullptr, 16);
  return bytes;
}

std::vector<int32_t> ids_of(const json& value) { return value.get<std::vector<int32_t>>(); }

TEST(TokenizerSmolLM2, VocabularyMatchesLlamaCpp) {
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

TEST(TokenizerSmolLM2, EncodeMatchesLlamaCpp) {
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

TEST(TokenizerSmolLM2, DecodeMatchesLlamaCpp) {
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

TEST(TokenizerSmolLM2, ChatTemplateRendersLikeJinja) {
  const ChatTemplate chat = chat_template_from_gguf(*model_file());
  EXPECT_EQ(chat.style(), ChatTemplate::Style::ChatML);
  EXPECT_EQ(chat.default_system(), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
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

}  // namespace
}  // namespace kvf
