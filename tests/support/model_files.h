// Paths of the real models and committed fixtures used by the `model` tests.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "io/gguf.h"
#include "io/model_paths.h"
#include "model/gguf_tokenizer.h"
#include "text/bpe_tokenizer.h"

namespace kvf::test {

// The SmolLM2 GGUF fetched by scripts/setup.sh (`make test` runs setup first, so its absence is a failure).
inline std::string smollm2_gguf() { return resolve_model("smollm2"); }

// A decoder preset's file and its tokenizer, opened once per test binary.
inline const std::shared_ptr<const gguf::File>& decoder_file(const std::string& preset) {
  static std::map<std::string, std::shared_ptr<const gguf::File>> files;
  auto& file = files[preset];
  if (!file) file = gguf::File::open(resolve_model(preset));
  return file;
}
inline const BpeTokenizer& decoder_tokenizer(const std::string& preset) {
  static std::map<std::string, std::unique_ptr<BpeTokenizer>> tokenizers;
  auto& tokenizer = tokenizers[preset];
  if (!tokenizer) tokenizer = std::make_unique<BpeTokenizer>(bpe_vocabulary_from_gguf(*decoder_file(preset)));
  return *tokenizer;
}
inline const std::shared_ptr<const gguf::File>& smollm2_file() { return decoder_file("smollm2"); }
inline const BpeTokenizer& smollm2_tokenizer() { return decoder_tokenizer("smollm2"); }

// Whether scripts/setup.sh installed a preset: `make test` fetches smollm2, minilm and qwen0.5b; tests of the
// larger qwen1.5b run only where someone ran `scripts/setup.sh qwen1.5b`.
inline bool preset_installed(const std::string& preset) { return std::filesystem::exists(preset_path(preset)); }
// A preset's name as a gtest parameter name ("qwen0.5b" -> "qwen0_5b").
inline std::string preset_test_name(std::string preset) {
  for (char& c : preset)
    if (c == '.') c = '_';
  return preset;
}

// tests/fixtures, passed by ctest in KVF_FIXTURES.
inline std::string fixture_path(const std::string& name) {
  const char* dir = std::getenv("KVF_FIXTURES");
  return std::string(dir ? dir : "tests/fixtures") + "/" + name;
}

}  // namespace kvf::test
