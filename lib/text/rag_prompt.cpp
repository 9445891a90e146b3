#include "text/rag_prompt.h"

#include <string_view>
#include <utility>

#include "core/error.h"

namespace kvf {

namespace {

// The template's rendering of one user message that starts with a marker, cut at the marker: whatever the
// template puts before user content is S, whatever follows the marker is the rest of the turn, for any template.
constexpr std::string_view kMarker = "\x01kvfuse-user-content\x01";

std::pair<std::string, std::string> split_at_marker(const ChatTemplate& chat, const std::string& system_message,
                                                    const std::string& after_marker) {
  std::vector<ChatMessage> messages{{"system", system_message.empty() ? kRagSystemMessage : system_message}};
  messages.push_back({"user", std::string(kMarker) + after_marker});
  const std::string rendered = chat.render(messages, true);
  const size_t at = rendered.find(kMarker);
  KVF_CHECK(at != std::string::npos, "chat template: the user's content does not appear in its rendering");
  return {rendered.substr(0, at), rendered.substr(at + kMarker.size())};
}

}  // namespace

std::string rag_system_prefix(const ChatTemplate& chat, const std::string& system_message) {
  return split_at_marker(chat, system_message, "").first;
}

std::string rag_question_suffix(const ChatTemplate& chat, const std::string& system_message,
                                const std::string& question) {
  return split_at_marker(chat, system_message, std::string(kRagQuestionInstruction) + "\nQuestion: " + question)
      .second;
}

}  // namespace kvf
