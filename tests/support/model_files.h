// Paths of the real models and committed fixtures used by the `model` tests.
#pragma once
#include <cstdlib>
#include <string>

#include "io/model_paths.h"

namespace kvf::test {

// The SmolLM2 GGUF fetched by scripts/setup.sh (`make test` runs setup first, so its absence is a failure).
inline std::string smollm2_gguf() { return resolve_model("smollm2"); }

// tests/fixtures, passed by ctest in KVF_FIXTURES.
inline std::string fixture_path(const std::string& name) {
  const char* dir = std::getenv("KVF_FIXTURES");
  return std::string(dir ? dir : "tests/fixtures") + "/" + name;
}

}  // namespace kvf::test
