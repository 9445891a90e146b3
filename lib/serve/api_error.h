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
  ApiError(int http_status, std::string message, std::string field = "", std::string reason = "")
      : std::runtime_error(std::move(message)), status(http_status), param(std::move(field)), code(std::move(reason)) {}
};

// The error object of a response: type from the status (invalid_request_error, authentication_error, ...).
nlohmann::json api_error_json(int status, const std::string& message, const std::string& param = "",
                              const std::string& code = "");

}  // namespace kvf
