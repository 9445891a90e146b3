// Where models live: $KVFUSE_HOME/models (default ~/.cache/kvfuse/models), filled by scripts/setup.sh.
#pragma once
#include <string>

namespace kvf {

// The embedder every tool and pipeline uses when none is named: the all-MiniLM-L6-v2 preset.
inline constexpr const char* kDefaultEmbedder = "minilm";

std::string kvfuse_home();
std::string models_dir();
// A preset's file or folder under models_dir() ("" for a name that is not a preset), whether installed or not:
// smollm2 (SmolLM2-135M-Instruct), qwen0.5b and qwen1.5b (Qwen2.5-Coder-0.5B/1.5B-Instruct) are GGUF files,
// qwen0.5b-hf the qwen0.5b GGUF written as a Hugging Face folder, minilm the all-MiniLM-L6-v2 folder.
std::string preset_path(const std::string& name);
// The preset whose file or folder is named `file_name` (e.g. "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" ->
// "qwen0.5b"); "" when no preset is.
std::string preset_of_file(const std::string& file_name);
// A preset's path, or anything else taken as a path. Throws kvf::Error naming the name and the expected path (and
// for a preset, the setup command that fetches it) when it is not there.
std::string resolve_model(const std::string& name_or_path);

}  // namespace kvf
