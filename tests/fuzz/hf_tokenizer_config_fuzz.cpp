// tokenizer_config.json (io/hf_tokenizer.h) of a tiny Hugging Face folder: special tokens, flags and the chat
// template read, the tokenizer built and used, the chat template recognised and rendered.
#include <cstdint>

#include "core/error.h"
#include "hf_fixture.h"
#include "hf_tokenizer_run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvf::fuzz::run_hf_tokenizer(kvf::fuzz::hf_folder_with("tokenizer_config.json", data, size));
  return 0;
}
