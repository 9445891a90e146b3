// What the commands need of a decoder's tokenizer, whichever kind its vocabulary is: byte-level BPE
// (text/bpe_tokenizer.h: SmolLM2, Qwen2, Llama 3) or SentencePiece-style (text/spm_tokenizer.h: Llama 2,
// Mistral 7B). model/gguf_tokenizer.h's tokenizer_from_gguf picks the kind a model file names.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/bpe_vocabulary.h"

namespace kvf {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`. add_special: BOS / EOS where the vocabulary asks for them (llama_tokenize's
  // add_special). parse_special: control tokens written in the text ("<|im_start|>", "</s>") become their ids;
  // user-defined tokens always do.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const = 0;
  // The bytes the ids stand for. Control tokens render as their text unless skip_special. Throws kvf::Error on
  // an id outside the vocabulary.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;
  // The bytes of one token, control tokens as their text (for streaming output).
  virtual std::string token_piece(int32_t id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos() const = 0;  // -1 when the vocabulary has none
  virtual int32_t eos() const = 0;
  // End of generation: EOS, end-of-turn tokens ("<|im_end|>", "<|eot_id|>", ...) and fill-in-the-middle
  // separators, found as llama.cpp's vocabulary loader finds them.
  virtual bool is_eog(int32_t id) const = 0;
  // The type after llama.cpp's fix-ups (end-of-turn-looking tokens become Control).
  virtual TokenType token_type(int32_t id) const = 0;
};

// Text decoded from a generation that stopped inside a multi-byte character ends with that character's first
// bytes: they are dropped, so the text is valid UTF-8 again (when the rest is).
std::string without_partial_utf8_tail(std::string text);

}  // namespace kvf
