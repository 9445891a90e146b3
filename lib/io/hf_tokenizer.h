// A Hugging Face BPE tokenizer (tokenizer.json, tokenizer_config.json, chat_template.jinja), byte-level or
// SentencePiece-style (byte_fallback, io/hf_spm_tokenizer.h), written as
// the "tokenizer." GGUF metadata llama.cpp's converter would write for it: token texts, types, merges, the
// pre-tokenizer's name, special ids and the chat template. text/ builds the tokenizer from that, as for a GGUF.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "io/gguf.h"
#include "io/hf_config.h"

namespace kvf {

// "NFC" when tokenizer.json normalizes text so before pre-tokenizing (GGUF has no such key; absent: none).
inline constexpr const char* kNormalizerKey = "tokenizer.normalizer";

// Reads the tokenizer files of folder `dir`; the vocabulary is padded to config.vocab with unused "[PADn]" tokens.
// Throws kvf::Error naming the file and the field for anything it cannot represent (another model type, a
// pre-tokenizer it does not know, an id outside the vocabulary).
void add_hf_tokenizer_metadata(const std::string& dir, const HfDecoderConfig& config,
                               std::map<std::string, gguf::Value>& metadata);

}  // namespace kvf
