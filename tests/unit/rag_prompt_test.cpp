// The RAG prompt's S and Q (lib/text/rag_prompt.h): S + chunks + Q is the template's rendering of one user message,
// and both ask for a short answer.
#include <gtest/gtest.h>

#include "text/chat_template.h"
#include "text/rag_prompt.h"

namespace kvf {
namespace {

// A ChatML template that inserts its own system message when a conversation has none (as SmolLM2's does).
const ChatTemplate& chat() {
  static const ChatTemplate t(
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
      "You are a helpful AI assistant<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<|im_start|>assistant\\n' }}{% endif %}");
  return t;
}

TEST(RagPrompt, SystemPrefixAsksForShortAnswersUnlessGivenAnother) {
  EXPECT_EQ(rag_system_prefix(chat(), ""),
            std::string("<|im_start|>system\n") + kRagSystemMessage + "<|im_end|>\n<|im_start|>user\n");
  EXPECT_NE(std::string(kRagSystemMessage).find("short answer"), std::string::npos);
  EXPECT_EQ(rag_system_prefix(chat(), "Be brief."), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n");
}

TEST(RagPrompt, PrefixChunksAndSuffixAreOneUserMessage) {
  const std::string chunks = "Title: Saturn\nSaturn has rings.\n\n";
  const std::string q = rag_question_suffix(chat(), "", "Which planet has rings?");
  EXPECT_EQ(q,
            "Answer the question using the passages above. Reply with the short answer only, no explanation.\n"
            "Question: Which planet has rings?<|im_end|>\n<|im_start|>assistant\n");
  const std::string user = chunks + q.substr(0, q.find("<|im_end|>"));
  EXPECT_EQ(rag_system_prefix(chat(), "") + chunks + q,
            chat().render({{"system", kRagSystemMessage}, {"user", user}}, true));
}

}  // namespace
}  // namespace kvf
