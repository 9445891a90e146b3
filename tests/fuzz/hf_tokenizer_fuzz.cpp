// tokenizer.json (io/hf_tokenizer.h) of a tiny Hugging Face folder: read into GGUF tokenizer metadata, built into
// the BPE tokenizer the decoder uses (model/gguf_tokenizer.h), which then encodes and decodes a fixed text.
#include <cstdint>

#include "core/error.h"
#include "hf_fixture.h"
#include "hf_tokenizer_run.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvf::fuzz::run_hf_tokenizer(kvf::fuzz::hf_folder_with("tokenizer.json", data, size));
  return 0;
}
