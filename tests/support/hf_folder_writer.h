// Writes a (tiny) GGUF decoder as a Hugging Face folder the way transformers lays one out: config.json,
// safetensors shards with model.safetensors.index.json (or one model.safetensors), llama's Q/K rows in Hugging
// Face order, and a byte-level tokenizer.json over the GGUF's vocabulary size (one token per byte, then fillers).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf::test {

struct HfFolderSpec {
  int shards = 1;  // 1: model.safetensors; more: model-0000N-of-0000M.safetensors and the index
};

// The folder `dir` (created), holding the GGUF's tensors in their stored type (F32, F16 or BF16).
void write_hf_folder(const std::string& gguf_path, const std::string& dir, const HfFolderSpec& spec = {});

// Writes a safetensors file of the given tensors (name, dtype as the header spells it, shape, bytes).
struct SafetensorsEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors);

}  // namespace kvf::test
