// WordPiece tokenizer with the semantics of HF's BertTokenizer (BertNormalizer + BertPreTokenizer + WordPiece in
// `tokenizers`): special-token strings in the raw text become their ids; the rest is cleaned (control and format
// characters, NUL and U+FFFD dropped, whitespace made a space), CJK ideographs get spaces around them, accents are
// stripped (NFD, nonspacing marks dropped) and text lowercased when the options say so; words split on whitespace
// and around punctuation; each word becomes the greedy longest-match-first pieces ("##" continuations), or [UNK]
// when it is longer than max_input_chars_per_word or some part of it matches nothing.
// Unicode properties come from utf8proc (current Unicode). HF's `tokenizers` classifies with tables from about
// Unicode 9, so for characters added or recategorised since (a few hundred marks and punctuation signs of newer
// scripts and 13 format characters) the two can differ; the slow Python BertTokenizer uses current tables too.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvf {

struct WordPieceOptions {
  bool lowercase = true;
  bool strip_accents = true;  // HF's strip_accents = null means "as lowercase"
  bool split_cjk = true;      // tokenize_chinese_chars
  int max_input_chars_per_word = 100;
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", pad = "[PAD]", mask = "[MASK]";
};

// Right-padded ids of several texts.
struct TokenBatch {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> ids;   // [rows, cols], padding is the pad id
  std::vector<int32_t> mask;  // [rows, cols], 1 for a token, 0 for padding
};

class WordPieceTokenizer {
 public:
  // vocab[i] is the text of id i. Throws kvf::Error on a duplicate token or a special token missing from it.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options);
  // vocab.txt (one token a line) and tokenizer_config.json (do_lower_case, strip_accents, tokenize_chinese_chars,
  // special token names; absent keys keep BertTokenizer's defaults) from a model folder.
  static WordPieceTokenizer load(const std::string& dir);

  // The word pieces of `text` without [CLS]/[SEP]. Bytes that are not UTF-8 count as U+FFFD.
  std::vector<int32_t> tokenize(std::string_view text) const;
  // [CLS] pieces [SEP], the pieces cut so that the whole is at most max_length (>= 2) ids long.
  std::vector<int32_t> encode(std::string_view text, int max_length) const;
  // encode() of each text, right-padded to the longest.
  TokenBatch encode_batch(const std::vector<std::string>& texts, int max_length) const;

  int32_t id(const std::string& token) const;  // throws naming a token that is not in the vocabulary
  const std::string& token(int32_t id) const;  // throws on an id outside the vocabulary
  int32_t vocab_size() const { return (int32_t)vocab_.size(); }
  int32_t pad_id() const { return pad_; }
  const WordPieceOptions& options() const { return options_; }
  // XXH3 of the vocabulary and options: equal hashes tokenize alike.
  uint64_t hash() const;

 private:
  std::u32string normalize(std::string_view text) const;
  void split_words(const std::u32string& text, std::vector<int32_t>& out) const;
  void encode_word(const std::u32string& word, std::vector<int32_t>& out) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t> ids_;
  WordPieceOptions options_;
  std::vector<int32_t> specials_;  // cut out of the raw text, longest first
  int32_t unk_, cls_, sep_, pad_;
  size_t max_token_bytes_ = 0;  // no piece is longer: bounds the longest-match search
};

}  // namespace kvf
