#include "text/chat_template.h"

#include "text/jinja_chat_template.h"

namespace kvf {
namespace {

// The text of a jinja string literal between its quotes, escapes resolved.
std::string unescape(const std::string& literal) {
  std::string out;
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] != '\\' || i + 1 == literal.size()) {
      out += literal[i];
      continue;
    }
    const char c = literal[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

// The default system message of a ChatML template: a literal "<|im_start|>system\n...<|im_end|>" with no
// template code inside, in a template that decides on the first message's role.
std::string default_system_message(const std::string& source) {
  if (source.find("'system'") == std::string::npos && source.find("\"system\"") == std::string::npos) return "";
  const std::string header = "<|im_start|>system";
  for (size_t at = source.find(header); at != std::string::npos; at = source.find(header, at + 1)) {
    size_t begin = at + header.size();
    if (source.compare(begin, 2, "\\n") == 0) {
      begin += 2;
    } else if (source.compare(begin, 1, "\n") == 0) {
      begin += 1;
    } else {
      continue;
    }
    const size_t end = source.find("<|im_end|>", begin);
    if (end == std::string::npos) break;
    const std::string literal = source.substr(begin, end - begin);
    if (!literal.empty() && literal.find_first_of("{}'\"") == std::string::npos) return unescape(literal);
  }
  return "";
}

std::string trim(const std::string& text) {
  const char* space = " \t\n\r\f\v";
  const size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& jinja_source) {
  if (jinja_source.find("<|im_start|>") != std::string::npos) {
    default_system_ = default_system_message(jinja_source);
  } else if (jinja_source.find("<|start_header_id|>") != std::string::npos &&
             jinja_source.find("<|end_header_id|>") != std::string::npos) {
    style_ = Style::Llama3;
  } else {
    note_ = jinja_source.empty() ? "the model has no chat template; rendering ChatML"
                                 : "unrecognised chat template; rendering ChatML";
  }
}

ChatTemplate::ChatTemplate(const std::string& jinja_source, const std::string& origin, const std::string& bos_token,
                           const std::string& eos_token)
    : ChatTemplate(jinja_source) {
  // No template: ChatML with the note; a ChatML template: the native renderer, as before (it writes what SmolLM2's
  // and Qwen2.5's templates write, as tests/unit/jinja_chat_template_test.cpp checks).
  if (jinja_source.empty() || (style_ == Style::ChatML && note_.empty())) return;
  auto jinja = std::make_shared<const JinjaChatTemplate>(jinja_source, origin, bos_token, eos_token);
  if (style_ == Style::Llama3) {
    // The native Llama 3 renderer stays where it writes what the template writes after its BOS (Llama 3.0; not
    // Llama 3.1, whose template writes a date preamble).
    const std::vector<std::vector<ChatMessage>> probes = {
        {{"user", "Hi"}},
        {{"system", "S"}, {"user", "U"}, {"assistant", "A"}, {"user", " V\n"}},
    };
    bool same = true;
    for (const auto& probe : probes) {
      for (const bool prompt : {false, true}) {
        std::string expected = jinja->render(probe, prompt);
        if (!bos_token.empty() && expected.compare(0, bos_token.size(), bos_token) == 0) {
          expected.erase(0, bos_token.size());
        }
        same = same && render(probe, prompt) == expected;
      }
    }
    if (same) return;
  }
  style_ = Style::Jinja;
  default_system_.clear();
  note_.clear();
  jinja_ = std::move(jinja);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out;
  if (style_ == Style::Jinja) {
    out = jinja_->render(messages, add_generation_prompt);
    const std::string& bos = jinja_->bos_token();
    if (!bos.empty() && out.compare(0, bos.size(), bos) == 0) out.erase(0, bos.size());
    return out;
  }
  if (style_ == Style::Llama3) {
    for (const ChatMessage& m : messages) {
      out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0 && !default_system_.empty() && messages[0].role != "system") {
      out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
    }
    out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace kvf
