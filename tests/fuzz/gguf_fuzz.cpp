// The GGUF reader (io/gguf.h) and what the decoder reads from its metadata: the Llama configuration, the BPE
// vocabulary and the chat template; then every tensor's first row dequantized.
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/gguf.h"
#include "model/gguf_tokenizer.h"
#include "model/llama_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::write_input("model.gguf", data, size);
  try {
    const auto file = kvf::gguf::File::open(path);
    for (const auto& t : file->tensors()) {
      try {
        if (t.ne.empty() || t.rows() == 0 || t.ne[0] > (1 << 16)) continue;
        std::vector<float> row(static_cast<size_t>(t.ne[0]));
        file->dequantize_rows(t, 0, 1, row.data());
      } catch (const kvf::Error&) {
      }
    }
    try {
      kvf::llama_config_from_gguf(*file);
    } catch (const kvf::Error&) {
    }
    try {
      kvf::chat_template_from_gguf(*file);
    } catch (const kvf::Error&) {
    }
    kvf::bpe_vocabulary_from_gguf(*file);
  } catch (const kvf::Error&) {
  }
  return 0;
}
