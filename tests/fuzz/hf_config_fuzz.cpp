// config.json (io/hf_config.h): read and checked, written as GGUF metadata (with llama3 rope factors), and that
// metadata read back as the decoder reads a GGUF's (model/llama_config.h).
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/gguf.h"
#include "io/hf_config.h"
#include "model/llama_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::write_input("config.json", data, size);
  try {
    const kvf::HfDecoderConfig c = kvf::read_hf_config(path);
    kvf::gguf::Parts parts;
    parts.path = path;
    kvf::add_hf_config_metadata(c, parts.metadata);
    if (c.rope_scaling == "llama3") kvf::llama3_rope_factors(c);
    kvf::llama_config_from_gguf(*kvf::gguf::File::assemble(std::move(parts)));
  } catch (const kvf::Error&) {
  }
  return 0;
}
