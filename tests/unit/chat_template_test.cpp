#include <gtest/gtest.h>

#include "text/chat_template.h"

namespace kvf {
namespace {

// SmolLM2-135M-Instruct's tokenizer.chat_template, verbatim (its newlines are real newlines).
const char* const kSmolLM2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}";

// The plain ChatML template (jinja escapes instead of real newlines).
const char* const kChatML =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The part of Qwen2.5's template that supplies its default system message.
const char* const kQwenLike =
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + "
    "'<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a "
    "helpful assistant.<|im_end|>\\n' }}{%- endif %}";

// Meta Llama 3 Instruct.
const char* const kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

const std::vector<ChatMessage> kConversation = {{"user", "Hi!"}, {"assistant", "Hello."}, {"user", "Bye"}};

TEST(ChatTemplate, SmolLM2InsertsItsDefaultSystemMessage) {
  const ChatTemplate chat(kSmolLM2);
  EXPECT_EQ(chat.style(), ChatTemplate::Style::ChatML);
  EXPECT_EQ(chat.default_system(), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(chat.note(), "");
  EXPECT_EQ(chat.render(kConversation, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  // A system message of the conversation replaces the default; no messages, no system message.
  EXPECT_EQ(chat.render({{"system", "Be brief."}, {"user", "Hi"}}, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(chat.render({}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, PlainChatMLHasNoDefaultSystemMessage) {
  const ChatTemplate chat(kChatML);
  EXPECT_EQ(chat.style(), ChatTemplate::Style::ChatML);
  EXPECT_EQ(chat.default_system(), "");
  EXPECT_EQ(chat.render({{"user", "Hi!"}}, true), "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ReadsAnEscapedDefaultSystemMessage) {
  const ChatTemplate chat(kQwenLike);
  EXPECT_EQ(chat.default_system(), "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
}

TEST(ChatTemplate, Llama3TrimsContentAndLeavesBosToTheTokenizer) {
  const ChatTemplate chat(kLlama3);
  EXPECT_EQ(chat.style(), ChatTemplate::Style::Llama3);
  EXPECT_EQ(chat.render({{"system", " Be brief.\n"}, {"user", "Hi"}}, true),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, UnknownTemplatesFallBackToChatMLWithANote) {
  const ChatTemplate unknown("{{ messages[0]['content'] }}");
  EXPECT_EQ(unknown.style(), ChatTemplate::Style::ChatML);
  EXPECT_NE(unknown.note(), "");
  EXPECT_EQ(unknown.render({{"user", "Hi"}}, false), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_NE(ChatTemplate("").note(), "");
}

}  // namespace
}  // namespace kvf
