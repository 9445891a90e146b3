// A chat template rendered by a Jinja engine: minja (llama.cpp's header-only Jinja, MIT; scripts/setup.sh installs
// it, never committed), with the globals transformers gives a template (messages, add_generation_prompt,
// bos_token, eos_token, raise_exception, strftime_now), trim_blocks and lstrip_blocks as transformers sets them.
// tests/unit/jinja_chat_template_test.cpp checks its renderings against Python's jinja2 byte for byte.
//
// A template minja cannot parse, or a rendering that throws (an unknown filter or tag, raise_exception), is an
// error naming the template's origin (the model file) and minja's message; nothing is ever rendered in its place.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "text/chat_template.h"

namespace kvf {

class JinjaChatTemplate {
 public:
  // Parses the template; throws kvf::Error("<origin>: chat template not supported by minja: <error>").
  JinjaChatTemplate(const std::string& source, const std::string& origin, const std::string& bos_token,
                    const std::string& eos_token);
  ~JinjaChatTemplate();
  JinjaChatTemplate(const JinjaChatTemplate&) = delete;
  JinjaChatTemplate& operator=(const JinjaChatTemplate&) = delete;

  // The rendering, exactly as jinja2 writes it (bos_token included where the template writes it); throws
  // kvf::Error("<origin>: chat template: <error>") when the template refuses the conversation or fails.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  const std::string& origin() const { return origin_; }
  const std::string& bos_token() const { return bos_token_; }

 private:
  struct Parsed;
  std::unique_ptr<Parsed> parsed_;
  std::string origin_, bos_token_, eos_token_;
};

}  // namespace kvf
