// Chat prompts as a model's own chat template renders them. The GGUF's tokenizer.chat_template is a jinja
// program; rather than interpret jinja, the template is recognised by its markers (as llama.cpp's
// llm_chat_detect_template does) and rendered natively:
//   ChatML  "<|im_start|>role\ncontent<|im_end|>\n" per message, "<|im_start|>assistant\n" to prompt a reply.
//           A template that inserts a default system message when the conversation does not start with one
//           (SmolLM2: "You are a helpful AI assistant named SmolLM, trained by Hugging Face") keeps doing so.
//   Llama3  "<|start_header_id|>role<|end_header_id|>\n\n" + trimmed content + "<|eot_id|>"; the BOS the template
//           writes first is left to the tokenizer (add_bos), and Llama 3.1's date/tools preamble is not rendered.
// Anything else renders ChatML, and note() says so.
//
// A model's own template (the constructor with its origin, bos_token and eos_token: chat_template_from_gguf) is
// rendered by minja (text/jinja_chat_template.h), as jinja2 renders it, except a ChatML template, which the native
// renderer above renders as before (SmolLM2, Qwen2.5 and Qwen2.5-Coder: the same text byte for byte, as
// tests/unit/jinja_chat_template_test.cpp checks), and a Llama 3 template the native renderer writes the same
// text for on probe conversations (Llama 3.0; Llama 3.1's date preamble makes it minja's). A template minja
// cannot parse is refused (kvf::Error naming the model file and minja's message), never replaced by ChatML; only
// a model with no template at all renders ChatML, with a note.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace kvf {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class JinjaChatTemplate;

class ChatTemplate {
 public:
  enum class Style { ChatML, Llama3, Jinja };

  explicit ChatTemplate(const std::string& jinja_source);

  // A model's own template, origin naming its file (in errors); see above. Style::Jinja renders with minja and
  // drops a leading bos_token from the rendering (the tokenizer writes BOS, add_bos).
  ChatTemplate(const std::string& jinja_source, const std::string& origin, const std::string& bos_token,
               const std::string& eos_token);

  // The prompt text; with add_generation_prompt it ends with the assistant header, ready for the reply.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  Style style() const { return style_; }
  const std::string& default_system() const { return default_system_; }  // empty when the template has none
  const std::string& note() const { return note_; }  // why the template fell back to ChatML; empty otherwise

 private:
  Style style_ = Style::ChatML;
  std::string default_system_;
  std::string note_;
  std::shared_ptr<const JinjaChatTemplate> jinja_;
};

}  // namespace kvf
