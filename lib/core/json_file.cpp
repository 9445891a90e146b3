#include "core/json_file.h"

#include "core/error.h"
#include "core/regular_file.h"

namespace kvf {

nlohmann::json read_json_file(const std::string& path, uint64_t max_bytes) {
  const std::string text = read_regular_file(path, max_bytes);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path, ": not valid JSON (", json_error_text(e), ")");
  }
}

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string what = e.what();
  const size_t last_read = what.find("; last read: ");
  if (last_read != std::string::npos) what.resize(last_read);
  return what;
}

std::string json_shown(const nlohmann::json& value, size_t max_chars) {
  std::string text = value.dump();
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

}  // namespace kvf
