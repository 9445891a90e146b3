#include "text/wordpiece.h"

#include <utf8proc.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/json_file.h"
#include "core/regular_file.h"

namespace kvf {
namespace {

constexpr uint64_t kMaxVocabBytes = 64u << 20;  // vocab.txt and tokenizer_config.json: a few hundred KB

bool in_category(char32_t cp, std::initializer_list<utf8proc_category_t> cats) {
  const utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
  return std::find(cats.begin(), cats.end(), c) != cats.end();
}

// Dropped by the cleaning step (tab, newline and carriage return are whitespace instead).
bool is_control(char32_t cp) {
  if (cp == U'\t' || cp == U'\n' || cp == U'\r') return false;
  return in_category(cp, {UTF8PROC_CATEGORY_CC, UTF8PROC_CATEGORY_CF, UTF8PROC_CATEGORY_CO});
}

// Rust's char::is_whitespace (the White_Space property), which `tokenizers` uses.
bool is_whitespace(char32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0d) || cp == 0x85) return true;
  return in_category(cp, {UTF8PROC_CATEGORY_ZS, UTF8PROC_CATEGORY_ZL, UTF8PROC_CATEGORY_ZP});
}

// All ASCII non-alphanumeric printables count, as in BERT, even those Unicode calls symbols ("$", "+", "^").
bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return in_category(cp, {UTF8PROC_CATEGORY_PC, UTF8PROC_CATEGORY_PD, UTF8PROC_CATEGORY_PS, UTF8PROC_CATEGORY_PE,
                          UTF8PROC_CATEGORY_PI, UTF8PROC_CATEGORY_PF, UTF8PROC_CATEGORY_PO});
}

// The CJK Unified Ideographs blocks as `tokenizers` lists them (0x2B920, not 0x2B820, starts its last range).
bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void append_utf8(char32_t cp, std::string& out) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)cp, buf);
  out.append(reinterpret_cast<const char*>(buf), (size_t)n);
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append_utf8(cp, out);
  return out;
}

// NFD of the whole text (so combining marks are canonically ordered), nonspacing marks dropped.
std::u32string strip_accents(std::u32string_view text) {
  const std::string utf8 = to_utf8(text);
  const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  std::vector<utf8proc_int32_t> nfd(utf8.size() + 8);
  utf8proc_ssize_t n = 0;
  for (;;) {  // the first call reports the length needed when the buffer is short
    n = utf8proc_decompose(src, (utf8proc_ssize_t)utf8.size(), nfd.data(), (utf8proc_ssize_t)nfd.size(),
                           UTF8PROC_DECOMPOSE);
    KVF_CHECK(n >= 0, "wordpiece: NFD failed: ", utf8proc_errmsg(n));
    if ((size_t)n <= nfd.size()) break;
    nfd.resize((size_t)n);
  }
  std::u32string out;
  out.reserve((size_t)n);
  for (utf8proc_ssize_t i = 0; i < n; ++i)
    if (utf8proc_category(nfd[i]) != UTF8PROC_CATEGORY_MN) out.push_back((char32_t)nfd[i]);
  return out;
}

// Rust's char::to_lowercase: the simple mapping, except U+0130 (the one unconditional multi-character mapping).
std::u32string lowercase(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t cp : text) {
    if (cp == 0x130) {
      out += U"i\u0307";
    } else {
      out.push_back((char32_t)utf8proc_tolower((utf8proc_int32_t)cp));
    }
  }
  return out;
}

// A token name in tokenizer_config.json: a string, or an AddedToken object with "content".
std::string token_name(const nlohmann::json& config, const char* key, const std::string& dflt) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return dflt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail("tokenizer_config.json: '", key, "' is neither a string nor a token object: ", it->dump());
}

bool flag(const nlohmann::json& config, const char* key, bool dflt) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return dflt;
  KVF_CHECK(it->is_boolean(), "tokenizer_config.json: '", key, "' is not a boolean: ", it->dump());
  return it->get<bool>();
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  KVF_CHECK(options_.max_input_chars_per_word > 0, "wordpiece: max_input_chars_per_word ",
            options_.max_input_chars_per_word, " must be positive");
  for (size_t i = 0; i < vocab_.size(); ++i) {
    const auto [it, inserted] = ids_.emplace(vocab_[i], (int32_t)i);
    KVF_CHECK(inserted, "wordpiece: token '", vocab_[i], "' appears twice (ids ", it->second, " and ", i, ")");
    max_token_bytes_ = std::max(max_token_bytes_, vocab_[i].size());
  }
  unk_ = id(options_.unk);
  cls_ = id(options_.cls);
  sep_ = id(options_.sep);
  pad_ = id(options_.pad);
  for (const std::string* s : {&options_.unk, &options_.cls, &options_.sep, &options_.pad, &options_.mask})
    if (!s->empty() && ids_.count(*s)) specials_.push_back(ids_.at(*s));
  std::sort(specials_.begin(), specials_.end());
  specials_.erase(std::unique(specials_.begin(), specials_.end()), specials_.end());
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](int32_t a, int32_t b) { return vocab_[a].size() > vocab_[b].size(); });
}

WordPieceTokenizer WordPieceTokenizer::load(const std::string& dir) {
  const std::string vocab_path = dir + "/vocab.txt";
  std::istringstream in(read_regular_file(vocab_path, kMaxVocabBytes));
  std::vector<std::string> vocab;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    vocab.push_back(std::move(line));
  }
  KVF_CHECK(!vocab.empty(), vocab_path, ": empty vocabulary");

  WordPieceOptions options;
  const std::string config_path = dir + "/tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(config_path, ec))) {
    const nlohmann::json config = read_json_file(config_path, kMaxVocabBytes);
    try {
      options.lowercase = flag(config, "do_lower_case", true);
      options.strip_accents = flag(config, "strip_accents", options.lowercase);
      options.split_cjk = flag(config, "tokenize_chinese_chars", true);
      options.unk = token_name(config, "unk_token", options.unk);
      options.cls = token_name(config, "cls_token", options.cls);
      options.sep = token_name(config, "sep_token", options.sep);
      options.pad = token_name(config, "pad_token", options.pad);
      options.mask = token_name(config, "mask_token", options.mask);
    } catch (const Error& e) {
      fail(dir, "/", e.what());
    }
  }
  try {
    return WordPieceTokenizer(std::move(vocab), std::move(options));
  } catch (const Error& e) {
    fail(vocab_path, ": ", e.what());
  }
}

int32_t WordPieceTokenizer::id(const std::string& token) const {
  const auto it = ids_.find(token);
  if (it == ids_.end()) fail("wordpiece: token '", token, "' is not in the vocabulary");
  return it->second;
}

const std::string& WordPieceTokenizer::token(int32_t id) const {
  KVF_CHECK(id >= 0 && id < vocab_size(), "wordpiece: id ", id, " outside the vocabulary of ", vocab_size());
  return vocab_[(size_t)id];
}

std::u32string WordPieceTokenizer::normalize(std::string_view text) const {
  std::u32string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(text.size() - i), &cp);
    i += n > 0 ? (size_t)n : 1;
    const char32_t c = n > 0 ? (char32_t)cp : 0xFFFD;
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      out.push_back(U' ');
    } else if (options_.split_cjk && is_cjk(c)) {
      out += {U' ', c, U' '};
    } else {
      out.push_back(c);
    }
  }
  if (options_.strip_accents) out = strip_accents(out);
  if (options_.lowercase) out = lowercase(out);
  return out;
}

void WordPieceTokenizer::split_words(const std::u32string& text, std::vector<int32_t>& out) const {
  std::u32string word;
  const auto flush = [&] {
    if (!word.empty()) encode_word(word, out);
    word.clear();
  };
  for (char32_t c : text) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      word.push_back(c);
      flush();
    } else {
      word.push_back(c);
    }
  }
  flush();
}

void WordPieceTokenizer::encode_word(const std::u32string& word, std::vector<int32_t>& out) const {
  if (word.size() > (size_t)options_.max_input_chars_per_word) {
    out.push_back(unk_);
    return;
  }
  const std::string s = to_utf8(word);
  const size_t first = out.size();
  std::string candidate;
  for (size_t start = 0; start < s.size();) {
    // Longest first; no vocabulary entry is longer than max_token_bytes_, so shorter ends are enough.
    size_t end = std::min(s.size(), start + max_token_bytes_);
    int32_t found = -1;
    for (; end > start; --end) {
      if (end < s.size() && (s[end] & 0xC0) == 0x80) continue;  // not a character boundary
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(s, start, end - start);
      const auto it = ids_.find(candidate);
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // one part matches nothing: the whole word is unknown
      out.resize(first);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<int32_t> out;
  size_t piece = 0;  // start of the text not yet tokenized
  for (size_t i = 0; i < text.size();) {
    int32_t special = -1;
    for (int32_t sid : specials_)
      if (text.compare(i, vocab_[sid].size(), vocab_[sid]) == 0) {
        special = sid;
        break;
      }
    if (special < 0) {
      ++i;
      continue;
    }
    split_words(normalize(text.substr(piece, i - piece)), out);
    out.push_back(special);
    i += vocab_[special].size();
    piece = i;
  }
  split_words(normalize(text.substr(piece)), out);
  return out;
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, int max_length) const {
  KVF_CHECK(max_length >= 2, "wordpiece: max_length ", max_length, " leaves no room for [CLS] and [SEP]");
  std::vector<int32_t> pieces = tokenize(text);
  if (pieces.size() > (size_t)max_length - 2) pieces.resize((size_t)max_length - 2);
  std::vector<int32_t> ids;
  ids.reserve(pieces.size() + 2);
  ids.push_back(cls_);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(sep_);
  return ids;
}

TokenBatch WordPieceTokenizer::encode_batch(const std::vector<std::string>& texts, int max_length) const {
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(texts.size());
  TokenBatch batch;
  for (const std::string& t : texts) {
    rows.push_back(encode(t, max_length));
    batch.cols = std::max(batch.cols, (int64_t)rows.back().size());
  }
  batch.rows = (int64_t)rows.size();
  batch.ids.assign((size_t)(batch.rows * batch.cols), pad_);
  batch.mask.assign(batch.ids.size(), 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r].begin(), rows[r].end(), batch.ids.begin() + (int64_t)r * batch.cols);
    std::fill_n(batch.mask.begin() + (int64_t)r * batch.cols, rows[r].size(), 1);
  }
  return batch;
}

uint64_t WordPieceTokenizer::hash() const {
  std::string desc;
  for (const std::string& t : vocab_) desc += t + '\n';
  desc += std::to_string(options_.lowercase) + std::to_string(options_.strip_accents) +
          std::to_string(options_.split_cjk) + ' ' + std::to_string(options_.max_input_chars_per_word) + ' ' +
          options_.unk + options_.cls + options_.sep + options_.pad + options_.mask;
  return XXH3_64bits(desc.data(), desc.size());
}

}  // namespace kvf
