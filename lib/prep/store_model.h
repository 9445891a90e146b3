// The decoder a command uses when none is named: the one its store was built with. manifest.json records the
// model's file name; a preset's file name maps back to the preset, so `kvrun ask --store stores/demo-qwen0.5b`
// needs no --model.
#pragma once
#include <string>

namespace kvf {

// `model` when given; otherwise the preset the store at `store_dir` was built with, or smollm2 for a folder that
// holds no store yet. Throws kvf::Error naming the store and its model's file when that file is no preset (its
// path must then be given).
std::string model_for_store(const std::string& model, const std::string& store_dir);

// The --model help text shared by every command that has a store.
inline constexpr const char* kStoreModelHelp =
    "the decoder: a preset (smollm2, qwen0.5b, qwen1.5b), a GGUF file or a Hugging Face folder (default: the one "
    "the store was built with; smollm2 for a new store)";

}  // namespace kvf
