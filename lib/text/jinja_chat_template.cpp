#include "text/jinja_chat_template.h"

#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>

#include <minja.hpp>

#include "core/error.h"

namespace kvf {

struct JinjaChatTemplate::Parsed {
  std::shared_ptr<minja::TemplateNode> root;
};

JinjaChatTemplate::JinjaChatTemplate(const std::string& source, const std::string& origin,
                                     const std::string& bos_token, const std::string& eos_token)
    : parsed_(std::make_unique<Parsed>()), origin_(origin), bos_token_(bos_token), eos_token_(eos_token) {
  minja::Options options{};
  options.trim_blocks = true;
  options.lstrip_blocks = true;
  options.keep_trailing_newline = false;
  try {
    parsed_->root = minja::Parser::parse(source, options);
  } catch (const std::exception& e) {
    fail(origin_, ": chat template not supported by minja: ", e.what());
  }
}

JinjaChatTemplate::~JinjaChatTemplate() = default;

std::string JinjaChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  try {
    auto context = minja::Context::make(
        minja::Value(nlohmann::ordered_json{{"messages", list}, {"add_generation_prompt", add_generation_prompt}}));
    context->set("bos_token", minja::Value(bos_token_));
    context->set("eos_token", minja::Value(eos_token_));
    context->set("strftime_now", minja::Value::callable([](const std::shared_ptr<minja::Context>&,
                                                           minja::ArgumentsValue& args) {
      args.expectArgs("strftime_now", {1, 1}, {0, 0});
      const std::string format = args.args[0].get<std::string>();
      const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
      std::tm local{};
      localtime_r(&now, &local);
      std::ostringstream os;
      os << std::put_time(&local, format.c_str());
      return minja::Value(os.str());
    }));
    return parsed_->root->render(context);
  } catch (const std::exception& e) {
    fail(origin_, ": chat template: ", e.what());
  }
}

}  // namespace kvf
