// Chat prompts as a model's own chat template renders them. The GGUF's tokenizer.chat_template is a jinja
// program; rather than interpret jinja, the template is recognised by its markers (as llama.cpp's
// llm_chat_detect_template does) and rendered natively:
//   ChatML  "<|im_start|>role\ncontent<|im_end|>\n" per message, "<|im_start|>assistant\n" to prompt a reply.
//           A template that inserts a default system message when the conversation does not start with one
//           (SmolLM2: "You are a helpful AI assistant named SmolLM, trained by Hugging Face") keeps doing so.
//   Llama3  "<|start_header_id|>role<|end_header_id|>\n\n" + trimmed content + "<|eot_id|>"; the BOS the template
//           writes first is left to the tokenizer (add_bos), and Llama 3.1's date/tools preamble is not rendered.
// Anything else renders ChatML, and note() says so.
#pragma once
#include <string>
#include <vector>

namespace kvf {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  enum class Style { ChatML, Llama3 };

  explicit ChatTemplate(const std::string& jinja_source);

  // The prompt text; with add_generation_prompt it ends with the assistant header, ready for the reply.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  Style style() const { return style_; }
  const std::string& default_system() const { return default_system_; }  // empty when the template has none
  const std::string& note() const { return note_; }  // why the template fell back to ChatML; empty otherwise

 private:
  Style style_ = Style::ChatML;
  std::string default_system_;
  std::string note_;
};

}  // namespace kvf
