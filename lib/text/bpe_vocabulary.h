// The vocabulary of a byte-level BPE tokenizer (GGUF tokenizer.ggml.model "gpt2") as the file stores it: token
// texts in GPT-2's byte-to-unicode alphabet ("Ġthe" for " the"), token types, merges by rank, the pre-tokenizer
// name and the special token ids. model/gguf_tokenizer.h reads it from a GGUF file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct BpeVocabulary {
  std::vector<std::string> tokens;     // id -> text; special tokens verbatim ("<|im_start|>")
  std::vector<TokenType> token_types;  // id -> type, same length as tokens
  std::vector<std::string> merges;     // "left right", rank = index (lower merges first)
  std::string pre = "default";         // tokenizer.ggml.pre: selects the pre-tokenizer
  bool nfc = false;                    // text is NFC-normalized before pre-tokenizing (a tokenizer.json normalizer)
  // Special ids; -1 where the file names none.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;      // end of turn
  int32_t eom_id = -1;      // end of message
  int32_t fim_pad_id = -1;  // fill-in-the-middle pad / repository / file separator: llama.cpp ends generation on them
  int32_t fim_rep_id = -1;
  int32_t fim_sep_id = -1;
  bool add_bos = false;  // what encoding "with specials" adds
  bool add_eos = false;
};

}  // namespace kvf
