// Paths of the real models and committed fixtures used by the `model` tests.
#pragma once
#include <cstdlib>
#include <string>

#include <memory>

#include "io/gguf.h"
#include "io/model_paths.h"
#include "model/gguf_tokenizer.h"
#include "text/bpe_tokenizer.h"

namespace kvf::test {

// The SmolLM2 GGUF fetched by scripts/setup.sh (`make test` runs setup first, so its absence is a failure).
inline std::string smollm2_gguf() { return resolve_model("smollm2"); }

// The SmolLM2 file and its tokenizer, opened once per test binary.
inline const std::shared_ptr<const gguf::File>& smollm2_file() {
  static const auto file = gguf::File::open(smollm2_gguf());
  return file;
}
inline const BpeTokenizer& smollm2_tokenizer() {
  static const BpeTokenizer instance(bpe_vocabulary_from_gguf(*smollm2_file()));
  return instance;
}

// tests/fixtures, passed by ctest in KVF_FIXTURES.
inline std::string fixture_path(const std::string& name) {
  const char* dir = std::getenv("KVF_FIXTURES");
  return std::string(dir ? dir : "tests/fixtures") + "/" + name;
}

}  // namespace kvf::test
