// Pre-tokenization for byte-level BPE: the text is cut into words, and BPE merges only within a word. Each
// tokenizer.ggml.pre name selects the regex list llama.cpp uses for it; the regexes run one after another, each
// cutting the pieces the previous one left (matches and the gaps between them both become pieces), so a later
// regex never sees across an earlier cut. Matching is PCRE2 (UTF + UCP, JIT-compiled).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kvf {

// What a pre-tokenizer name implies besides its regexes (llama.cpp's per-name settings).
struct PreTokenizerConfig {
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a word that is itself a token is emitted whole, unmerged (llama3)
  bool clean_spaces = true;    // decoding removes the space before ",.?!" and some contractions
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token when the file does not say
};

// The settings for a tokenizer.ggml.pre value; throws kvf::Error naming an unknown value.
const PreTokenizerConfig& pre_tokenizer_config(const std::string& pre);

class PreTokenizer {
 public:
  explicit PreTokenizer(const std::string& pre);  // compiles the regexes; throws kvf::Error on an unknown name

  const PreTokenizerConfig& config() const { return *config_; }

  // Appends the words of `text`, which must be valid UTF-8 (see to_llama_utf8), as views into it. The words
  // cover the text exactly, in order.
  void split(std::string_view text, std::vector<std::string_view>& words) const;

 private:
  struct Regex;
  const PreTokenizerConfig* config_;
  std::shared_ptr<const std::vector<Regex>> regexes_;  // shared: compiled code is immutable and thread-safe
};

// The text as llama.cpp decodes it before pre-tokenizing: every byte that starts no (leniently) well-formed
// UTF-8 sequence becomes U+FFFD, overlong forms become the code point they spell. Surrogates and code points
// beyond U+10FFFF also become U+FFFD (llama.cpp would emit invalid UTF-8 or abort there). Valid text is unchanged.
std::string to_llama_utf8(std::string_view text);

// Unicode normalization form C of valid UTF-8 text (utf8proc; NUL bytes are kept).
std::string to_nfc(std::string_view utf8);

}  // namespace kvf
