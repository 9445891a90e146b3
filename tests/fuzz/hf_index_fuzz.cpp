// model.safetensors.index.json of a tiny Hugging Face folder (two shards beside it): the whole folder opened as
// the decoder opens it (io/hf_folder.h), so every shard the index names is checked, opened and matched up.
#include <cstdint>

#include "core/error.h"
#include "hf_fixture.h"
#include "io/hf_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = kvf::fuzz::hf_folder_with("model.safetensors.index.json", data, size);
  try {
    kvf::open_hf_folder(dir);
  } catch (const kvf::Error&) {
  }
  return 0;
}
