// JSON input files (config.json, tokenizer.json, tokenizer_config.json, model.safetensors.index.json) read whole
// from a regular file (core/regular_file.h) and parsed, with errors that name the file and never quote its bytes.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace kvf {

// Throws kvf::Error "<path>: ..." when the file is not a regular file, is larger than max_bytes or is not JSON.
nlohmann::json read_json_file(const std::string& path, uint64_t max_bytes = uint64_t(1) << 30);

// A JSON library error as a message: where and what, without the text it last read. That text is the file's
// own bytes, and the file may be anything a link points at, so a message never shows it.
std::string json_error_text(const nlohmann::json::exception& e);

// A value as a message shows it: its JSON text, cut to about max_chars ("..." marks the cut).
std::string json_shown(const nlohmann::json& value, size_t max_chars = 80);

}  // namespace kvf
