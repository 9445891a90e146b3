// A Hugging Face decoder folder (config.json, model.safetensors or sharded model-*.safetensors with
// model.safetensors.index.json, tokenizer.json, tokenizer_config.json) read as the GGUF file llama.cpp's converter
// would make of it: the same metadata keys, tensor names, shapes and Q/K row order (llama's rows permuted so RoPE
// pairs adjacent dimensions). Tensors stay in the safetensors files (F32, F16, BF16), memory-mapped; only the
// permuted llama Q/K weights and llama3 rope factors are computed into memory.
#pragma once
#include <memory>
#include <string>

#include "io/gguf.h"

namespace kvf {

// Throws kvf::Error naming the file and the field, tensor or value at fault.
std::shared_ptr<const gguf::File> open_hf_folder(const std::string& dir);

// A decoder given as a GGUF file or a Hugging Face folder.
std::shared_ptr<const gguf::File> open_decoder_file(const std::string& path);

}  // namespace kvf
