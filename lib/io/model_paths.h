// Where models live: $KVFUSE_HOME/models (default ~/.cache/kvfuse/models), filled by scripts/setup.sh.
#pragma once
#include <string>

namespace kvf {

std::string kvfuse_home();
std::string models_dir();
// "smollm2" -> the cached SmolLM2-135M-Instruct GGUF; "minilm" -> the all-MiniLM-L6-v2 folder; anything else is
// taken as a path. Throws kvf::Error naming the name and the expected path when the file is not there.
std::string resolve_model(const std::string& name_or_path);

}  // namespace kvf
