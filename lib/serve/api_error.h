// An error a kvrun serve request gets, in OpenAI's shape: {"error": {"message", "type", "param", "code"}} with an
// HTTP status. The message names the field and the value.
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace kvf {

struct ApiError : std::runtime_error {
  int status;
  std::string param;  // the request field at fault ("messages", "kvfuse.recompute"); "" for none
  std::string code;   // a short machine-readable reason
  ApiError(int status, std::string message, std::string param = "", std::string code = "")
      : std::runtime_error(std::move(message)), status(status), param(std::move(param)), code(std::move(code)) {}
};

// The error object of a response: type from the status (invalid_request_error, authentication_error, ...).
nlohmann::json api_error_json(int status, const std::string& message, const std::string& param = "",
                              const std::string& code = "");

}  // namespace kvf
