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
#include "text/tokenizer.h"

namespace kvf {

class BpeTokenizer final : public Tokenizer {
 public:
  // Throws kvf::Error when tokens and types disagree in length or a token text appears twice.
  explicit BpeTokenizer(BpeVocabulary vocab);

  // Any bytes may be encoded: what is not UTF-8 becomes U+FFFD, as in llama.cpp.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const override;
  std::string token_piece(int32_t id) const override;

  int32_t vocab_size() const override { return (int32_t)vocab_.tokens.size(); }
  int32_t bos() const override { return vocab_.bos_id; }
  int32_t eos() const override { return vocab_.eos_id; }
  bool is_eog(int32_t id) const override;
  TokenType token_type(int32_t id) const override;
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
  void mark_end_of_generation();  // text/end_of_generation.h, and the fim ids it finds

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

}  // namespace kvf
