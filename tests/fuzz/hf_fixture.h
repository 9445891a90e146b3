// A tiny Hugging Face decoder folder (2 layers, hidden 64, vocabulary 97, two safetensors shards with their index)
// written once per process into the fuzz scratch folder; the Hugging Face targets replace one of its files with
// their input and read the folder as kvfuse does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvf::fuzz {

// The folder, written on first use.
std::string tiny_hf_folder();

// Replaces `file` of the folder with the bytes and returns the folder.
std::string hf_folder_with(const std::string& file, const uint8_t* data, size_t size);

}  // namespace kvf::fuzz
