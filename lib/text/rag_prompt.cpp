#include "text/rag_prompt.h"

#include "core/error.h"

namespace kvf {

std::string rag_system_prefix(const ChatTemplate& chat, const std::string& system_message) {
  // Render a conversation whose user content is a marker, then cut at the marker: whatever the template puts
  // before user content is S, for any template.
  static constexpr const char* kMarker = "\x01kvfuse-user-content\x01";
  std::vector<ChatMessage> messages;
  if (!system_message.empty()) messages.push_back({"system", system_message});
  messages.push_back({"user", kMarker});
  const std::string rendered = chat.render(messages, true);
  const size_t at = rendered.find(kMarker);
  KVF_CHECK(at != std::string::npos, "chat template: the user's content does not appear in its rendering");
  return rendered.substr(0, at);
}

}  // namespace kvf
