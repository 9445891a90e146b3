#include "io/model_paths.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace kvf {
namespace {

struct Preset {
  const char* name;
  const char* path;  // under models_dir(), as scripts/setup.sh installs it
};
constexpr Preset kPresets[] = {
    {"smollm2", "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"},
    {"qwen0.5b", "qwen0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"},
    {"qwen1.5b", "qwen1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"},
    {"qwen0.5b-hf", "qwen0.5b-hf"},  // the qwen0.5b GGUF written as a Hugging Face folder (F32 safetensors)
    {"minilm", "all-minilm-l6-v2"},
};

}  // namespace

std::string kvfuse_home() {
  if (const char* home = std::getenv("KVFUSE_HOME"); home && *home) return home;
  const char* user_home = std::getenv("HOME");
  return std::string(user_home && *user_home ? user_home : ".") + "/.cache/kvfuse";
}

std::string models_dir() { return kvfuse_home() + "/models"; }

std::string preset_path(const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return models_dir() + "/" + p.path;
  return "";
}

std::string preset_of_file(const std::string& file_name) {
  for (const Preset& p : kPresets)
    if (!file_name.empty() && std::filesystem::path(p.path).filename() == file_name) return p.name;
  return "";
}

std::string resolve_model(const std::string& name_or_path) {
  const std::string preset = preset_path(name_or_path);
  if (!preset.empty()) {
    KVF_CHECK(std::filesystem::exists(preset), "model '", name_or_path, "': ", preset,
              " does not exist (run `scripts/setup.sh ", name_or_path, "` to fetch it)");
    return preset;
  }
  std::error_code ec;  // a name the system refuses (too long, say) is a bad path too, not an exception
  KVF_CHECK(std::filesystem::exists(name_or_path, ec), "model '", name_or_path, "': ", name_or_path,
            ec ? ": " + ec.message() : std::string(" does not exist"),
            " (a preset: smollm2, qwen0.5b, qwen1.5b, qwen0.5b-hf, minilm; or a path)");
  return name_or_path;
}

}  // namespace kvf
