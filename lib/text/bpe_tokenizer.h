// Byte-level BPE tokenizer that produces the ids llama.cpp produces for the same GGUF vocabulary: special tokens
// are cut out of the text first (longest text first), the rest is pre-tokenized into words, each word's bytes are
// mapped to GPT-2's byte alphabet and merged pair by pair, lowest merge rank first.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/bpe_vocabulary.h"
#include "text/pretokenizer.h"

namespace kvf {

class BpeTokenizer {
 public:
  // Throws kvf::Error when tokens and types disagree in length or a token text appears twice.
  explicit BpeTokenizer(BpeVocabulary vocab);

  // Token ids of `text` (any bytes; what is not UTF-8 becomes U+FFFD as in llama.cpp).
  // add_special: prepend BOS / append EOS where the vocabulary asks for them (llama_tokenize's add_special).
  // parse_special: control tokens written in the text ("<|im_start|>") become their ids; user-defined tokens
  // always do.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes the ids stand for. Control tokens render as their text unless skip_special. Throws kvf::Error on an
  // id outside the vocabulary.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const;

  // The bytes of one token, control tokens as their text (for streaming output).
  const std::string& token_piece(int32_t id) const;

  int32_t vocab_size() const { return (int32_t)vocab_.tokens.size(); }
  int32_t bos() const { return vocab_.bos_id; }  // -1 when the vocabulary has none
  int32_t eos() const { return vocab_.eos_id; }
  // End of generation: EOS, end-of-turn tokens ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|endoftext|>", ...)
  // and fill-in-the-middle pad/repo/file-separator tokens, found by their text as llama.cpp finds them.
  bool is_eog(int32_t id) const;
  // The type after llama.cpp's fix-ups (end-of-turn-looking tokens become Control).
  TokenType token_type(int32_t id) const;
  const BpeVocabulary& vocabulary() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  struct Fragment;
  struct Workspace;

  void check_id(int32_t id) const;
  std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
  void encode_word(std::string_view word, Workspace& work, std::vector<int32_t>& out) const;
  // As llama.cpp's loader: finds the end-of-generation ids, retyping end-of-turn-looking tokens as control.
  void mark_end_of_generation();

  BpeVocabulary vocab_;  // token types after the fix-ups
  PreTokenizer pre_;
  std::unordered_map<std::string, int32_t> ids_;  // token text -> id
  std::unordered_map<uint64_t, Merge> merges_;    // (left id << 32 | right id) -> rank and merged id
  std::array<int32_t, 256> byte_ids_;             // byte -> id of its byte-alphabet token, -1 if none
  std::vector<std::string> pieces_;               // id -> bytes
  std::vector<int32_t> specials_;                 // ids cut out of text, longest text first
  std::vector<bool> eog_;
};

// GPT-2's printable stand-in for a byte (bytes_to_unicode), UTF-8 encoded: "Ġ" for ' ', "Ċ" for '\n', "!" for '!'.
const std::string& byte_level_char(uint8_t byte);

// Text decoded from a generation that stopped inside a multi-byte character ends with that character's first
// bytes: they are dropped, so the text is valid UTF-8 again (when the rest is).
std::string without_partial_utf8_tail(std::string text);

}  // namespace kvf
