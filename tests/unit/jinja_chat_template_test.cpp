// The models' own chat templates (tests/fixtures/chat_templates/*.jinja: Mistral-7B-Instruct-v0.2,
// Llama-3.1-8B-Instruct, Qwen2.5-7B-Instruct (= Qwen2.5-Coder's), SmolLM2-135M-Instruct) rendered by minja, byte for
// byte against Python's jinja2 (expected.json, made by tests/reference/make_chat_template_fixtures.py); the native
// ChatML renderer against the same renderings where ChatTemplate keeps it; refusals with their messages.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/model_files.h"
#include "text/chat_template.h"
#include "text/jinja_chat_template.h"
#include "support/test_values.h"

namespace kvf {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string template_path(const std::string& name) { return test::fixture_path("chat_templates/" + name); }

std::vector<ChatMessage> messages_of(const nlohmann::json& list) {
  std::vector<ChatMessage> out;
  for (const auto& m : list) out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  return out;
}

nlohmann::json expected_cases() {
  return nlohmann::json::parse(read_text(test::fixture_path("chat_templates/expected.json"))).at("cases");
}

using test::error_of;

TEST(JinjaChatTemplate, RendersAsJinja2DoesByteForByte) {
  const nlohmann::json cases = expected_cases();
  ASSERT_GE(cases.size(), 20u);
  size_t rendered = 0, refused = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("template");
    const JinjaChatTemplate jinja(read_text(template_path(name)), name, c.at("bos_token"), c.at("eos_token"));
    const std::vector<ChatMessage> messages = messages_of(c.at("messages"));
    const bool prompt = c.at("add_generation_prompt");
    SCOPED_TRACE(name + " / " + c.at("conversation").get<std::string>());
    if (c.contains("error")) {
      const std::string error = error_of([&] { jinja.render(messages, prompt); });
      EXPECT_NE(error.find(name), std::string::npos) << error;
      EXPECT_NE(error.find(c.at("error").get<std::string>()), std::string::npos) << error;
      ++refused;
    } else {
      EXPECT_EQ(jinja.render(messages, prompt), c.at("rendered").get<std::string>());
      ++rendered;
    }
  }
  EXPECT_EQ(rendered, 19u);
  EXPECT_EQ(refused, 1u);
}

// ChatTemplate with the model's template: native ChatML where it writes what jinja2 writes (SmolLM2, Qwen2.5),
// minja otherwise (Mistral, Llama 3.1), the leading BOS left to the tokenizer.
TEST(JinjaChatTemplate, ModelTemplatesRenderAsJinja2WithoutTheLeadingBos) {
  for (const auto& c : expected_cases()) {
    if (c.contains("error")) continue;
    const std::string name = c.at("template");
    const std::string bos = c.at("bos_token");
    const ChatTemplate chat(read_text(template_path(name)), name, bos, c.at("eos_token"));
    const bool chatml = name.find("Qwen") != std::string::npos || name.find("SmolLM2") != std::string::npos;
    SCOPED_TRACE(name + " / " + c.at("conversation").get<std::string>());
    EXPECT_EQ(chat.style(), chatml ? ChatTemplate::Style::ChatML : ChatTemplate::Style::Jinja);
    EXPECT_EQ(chat.note(), "");
    std::string expected = c.at("rendered");
    if (!chatml && !bos.empty() && expected.rfind(bos, 0) == 0) expected.erase(0, bos.size());
    EXPECT_EQ(chat.render(messages_of(c.at("messages")), c.at("add_generation_prompt")), expected);
  }
}

TEST(JinjaChatTemplate, RefusesWhatMinjaCannotParseNamingTheModelFile) {
  const std::string unknown_tag = error_of([] { ChatTemplate("{% frobnicate %}{{ messages }}", "m.gguf", "", ""); });
  EXPECT_NE(unknown_tag.find("m.gguf: chat template not supported by minja: "), std::string::npos) << unknown_tag;
  const std::string unclosed = error_of([] { ChatTemplate("{% for m in messages %}{{ m }}", "m.gguf", "", ""); });
  EXPECT_NE(unclosed.find("m.gguf: chat template not supported by minja: "), std::string::npos) << unclosed;
}

TEST(JinjaChatTemplate, RefusesAFilterMinjaLacksWhenRendering) {
  const ChatTemplate chat("{{ messages[0]['content'] | wordcount }}", "m.gguf", "", "");
  const std::string error = error_of([&] { chat.render({{"user", "one two"}}, false); });
  EXPECT_NE(error.find("m.gguf: chat template: "), std::string::npos) << error;
  EXPECT_NE(error.find("wordcount"), std::string::npos) << error;
}

TEST(JinjaChatTemplate, NoTemplateStillRendersChatMLWithANote) {
  const ChatTemplate chat("", "m.gguf", "", "");
  EXPECT_EQ(chat.style(), ChatTemplate::Style::ChatML);
  EXPECT_NE(chat.note(), "");
}

// Rendering time per conversation: minja against the native ChatML renderer on Qwen2.5's template (printed; the
// numbers in docs/models.md come from here).
TEST(JinjaChatTemplate, RenderingTime) {
  const std::string source = read_text(template_path("Qwen-Qwen2.5-7B-Instruct.jinja"));
  const JinjaChatTemplate jinja(source, "qwen", "", "<|im_end|>");
  const ChatTemplate native(source);
  const std::vector<ChatMessage> conversation = {
      {"system", "You answer questions from the passages the user gives."},
      {"user", "Passage: Paris is the capital of France.\nQuestion: What is the capital of France?"},
      {"assistant", "Paris"},
      {"user", "And of Italy?"}};
  ASSERT_EQ(jinja.render(conversation, true), native.render(conversation, true));
  const int n = 2000;
  size_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink += jinja.render(conversation, true).size();
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink += native.render(conversation, true).size();
  const auto t2 = std::chrono::steady_clock::now();
  const auto t3 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) sink += JinjaChatTemplate(source, "qwen", "", "<|im_end|>").origin().size();
  const auto t4 = std::chrono::steady_clock::now();
  const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
  std::printf("chat template rendering, 4 messages: minja %.1f us, native %.2f us; minja parse %.0f us (%zu)\n",
              us(t1 - t0) / n, us(t2 - t1) / n, us(t4 - t3) / 20, sink % 10);
}

}  // namespace
}  // namespace kvf
