#include "io/model_paths.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace kvf {

std::string kvfuse_home() {
  if (const char* home = std::getenv("KVFUSE_HOME"); home && *home) return home;
  const char* user_home = std::getenv("HOME");
  return std::string(user_home && *user_home ? user_home : ".") + "/.cache/kvfuse";
}

std::string models_dir() { return kvfuse_home() + "/models"; }

std::string resolve_model(const std::string& name_or_path) {
  std::string path;
  if (name_or_path == "smollm2") {
    path = models_dir() + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
  } else if (name_or_path == "minilm") {
    path = models_dir() + "/all-minilm-l6-v2";
  } else {
    path = name_or_path;
  }
  KVF_CHECK(std::filesystem::exists(path), "model '", name_or_path, "': ", path,
            " does not exist (run `make setup` to fetch the default models)");
  return path;
}

}  // namespace kvf
