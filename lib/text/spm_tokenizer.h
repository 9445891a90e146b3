// SentencePiece-style tokenizer (GGUF tokenizer.ggml.model "llama": Llama 2, Mistral 7B), giving the ids
// llama.cpp gives for the same vocabulary: spaces become U+2581 ("▁"), one "▁" is put before the text (and after
// each special token) when the vocabulary asks for a space prefix, and the text's characters are merged pair by
// pair, the pair whose merged text is the highest-scoring token first (leftmost on ties). A character no token
// spells becomes its bytes' <0xNN> tokens (byte fallback), else the unknown token.
//
// A vocabulary read from a Hugging Face tokenizer.json (a BPE model with byte_fallback) carries merges instead:
// then a pair merges by the merge list's rank (lowest first), as the Hugging Face tokenizers library merges. One
// in the newer form (a Metaspace pre-tokenizer) also carries the library's prefix rule (SpacePrefixRule).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/bpe_vocabulary.h"
#include "text/tokenizer.h"

namespace kvf {

// Where encode puts the "▁" prefix when add_space_prefix is set. Texts are cut at special tokens first; the rule
// decides for each piece of text between them.
enum class SpacePrefixRule {
  SentencePiece,    // before the text and after each special token, whatever follows (SentencePiece, llama.cpp)
  MetaspaceFirst,   // Hugging Face Metaspace, prepend_scheme "first": only before the piece at offset 0 of the
                    // text (none after a special token, none at all when the text starts with one), and not when
                    // that piece already starts with a space or "▁"
  MetaspaceAlways,  // prepend_scheme "always": before every piece, unless it already starts with a space or "▁"
};

struct SpmVocabulary {
  std::vector<std::string> tokens;     // id -> text, "▁" for a space; byte tokens "<0x0A>"
  std::vector<TokenType> token_types;  // id -> type, same length as tokens
  std::vector<float> scores;           // id -> score (higher merges first); empty when merges are given
  std::vector<std::string> merges;     // "left right" by rank; when not empty they decide instead of scores
  bool add_space_prefix = true;        // "▁" before the text (where prefix_rule says)
  SpacePrefixRule prefix_rule = SpacePrefixRule::SentencePiece;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  bool add_bos = true;
  bool add_eos = false;
};

class SpmTokenizer final : public Tokenizer {
 public:
  // Throws kvf::Error when the arrays disagree in length, a token text appears twice, a merge names no token
  // or a special id lies outside the vocabulary.
  explicit SpmTokenizer(SpmVocabulary vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  // "▁" becomes a space, byte tokens their byte, and the first token's leading space (the prefix encode adds) is
  // dropped; skip_special also drops a leading BOS and a trailing EOS and renders other control tokens as
  // nothing, as llama.cpp's llama_detokenize (remove_special, unparse_special false) does, whatever the
  // prefix rule: it keeps the unknown token ("▅"), and a skipped leading token uses up the space strip, where the
  // Hugging Face library drops every special token and strips the first space left.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const override;
  // "▁" as a space, a byte token as its byte, control tokens as their text.
  std::string token_piece(int32_t id) const override;

  int32_t vocab_size() const override { return (int32_t)vocab_.tokens.size(); }
  int32_t bos() const override { return vocab_.bos_id; }
  int32_t eos() const override { return vocab_.eos_id; }
  bool is_eog(int32_t id) const override;
  TokenType token_type(int32_t id) const override;
  const SpmVocabulary& vocabulary() const { return vocab_; }

 private:
  void check_id(int32_t id) const;
  // Appends the ids of one piece of text (spaces already "▁").
  void encode_text(const std::string& text, std::vector<int32_t>& out) const;
  // The merge priority of the pair (higher first); false when the pair does not merge.
  bool pair_priority(const std::string& merged, std::string_view left, std::string_view right,
                     double& priority) const;

  SpmVocabulary vocab_;
  std::unordered_map<std::string, int32_t> ids_;    // token text -> id
  std::unordered_map<std::string, int32_t> ranks_;  // "left right" -> merge rank (merges only)
  std::array<int32_t, 256> byte_ids_{};             // byte -> id of "<0xNN>" (or the byte itself), -1 if none
  std::vector<int32_t> specials_;                   // ids cut out of text, longest text first
  std::vector<bool> eog_;                           // id -> ends generation (text/end_of_generation.h)
};

}  // namespace kvf
