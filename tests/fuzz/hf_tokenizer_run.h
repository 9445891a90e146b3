// What the tokenizer targets do with a folder: the tokenizer files read as open_hf_folder reads them, the BPE
// tokenizer built from the result and used, the chat template rendered. A kvf::Error is an answer.
#pragma once
#include <map>
#include <string>

#include "core/error.h"
#include "io/gguf.h"
#include "io/hf_config.h"
#include "io/hf_tokenizer.h"
#include "model/gguf_tokenizer.h"
#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"

namespace kvf::fuzz {

inline void run_hf_tokenizer(const std::string& dir) {
  static const HfDecoderConfig config = read_hf_config(dir + "/config.json");
  try {
    gguf::Parts parts;
    parts.path = dir;
    add_hf_tokenizer_metadata(dir, config, parts.metadata);
    const auto file = gguf::File::assemble(std::move(parts));
    const BpeTokenizer tokenizer(bpe_vocabulary_from_gguf(*file));
    const ChatTemplate chat = chat_template_from_gguf(*file);
    const std::string prompt = chat.render({{"system", "Be brief."}, {"user", "Hello, <|im_end|> world 42!"}}, true);
    const std::vector<int32_t> ids = tokenizer.encode(prompt, true, true);
    tokenizer.decode(ids);
  } catch (const Error&) {
  }
}

}  // namespace kvf::fuzz
