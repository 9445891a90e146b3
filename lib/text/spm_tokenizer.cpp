#include "text/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "core/error.h"
#include "text/end_of_generation.h"

namespace kvf {
namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's stand-in for a space

// Bytes of the UTF-8 character that starts with `lead` (1 for a byte that cannot start one).
size_t utf8_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

std::string spaces_escaped(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ')
      escaped += kSpace;
    else
      escaped += c;
  }
  return escaped;
}

std::string spaces_unescaped(const std::string& text) {
  std::string plain;
  plain.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpace.size(), kSpace) == 0) {
      plain += ' ';
      i += kSpace.size();
    } else {
      plain += text[i++];
    }
  }
  return plain;
}

// "<0x41>" -> 0x41; -1 for any other text.
int byte_of_token(const std::string& text) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// One character (or, once merged, run of characters) of the text being encoded, in a linked list.
struct Symbol {
  size_t begin;
  size_t size;  // 0 once merged into its left neighbour
  int prev;
  int next;
};

struct Candidate {
  double priority;
  int left;
  int right;
  size_t size;  // bytes of the merged text: the pair is stale once either side has changed
};

struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(SpmVocabulary vocab) : vocab_(std::move(vocab)) {
  const size_t n = vocab_.tokens.size();
  KVF_CHECK(n > 0, "SentencePiece vocabulary: no tokens");
  KVF_CHECK(vocab_.token_types.size() == n, "SentencePiece vocabulary: ", vocab_.token_types.size(),
            " token types for ", n, " tokens");
  KVF_CHECK(vocab_.merges.empty() ? vocab_.scores.size() == n : true, "SentencePiece vocabulary: ",
            vocab_.scores.size(), " scores for ", n, " tokens");
  ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto [at, fresh] = ids_.emplace(vocab_.tokens[i], (int32_t)i);
    KVF_CHECK(fresh, "SentencePiece vocabulary: token \"", vocab_.tokens[i], "\" appears twice (ids ", at->second,
              " and ", i, ")");
  }
  for (size_t r = 0; r < vocab_.merges.size(); ++r) {
    const std::string& m = vocab_.merges[r];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    KVF_CHECK(space != std::string::npos && space + 1 < m.size(), "SentencePiece vocabulary: merge ", r, " \"", m,
              "\" is not \"left right\"");
    const std::string joined = m.substr(0, space) + m.substr(space + 1);
    KVF_CHECK(ids_.count(joined), "SentencePiece vocabulary: merge ", r, " \"", m, "\" makes no token");
    ranks_.emplace(m, (int32_t)r);  // a merge listed twice keeps its first rank
  }
  for (int32_t id : {vocab_.bos_id, vocab_.eos_id, vocab_.unk_id, vocab_.pad_id})
    KVF_CHECK(id >= -1 && id < (int32_t)n, "SentencePiece vocabulary: special id ", id,
              " is outside the vocabulary of ", n, " tokens");
  KVF_CHECK(!vocab_.add_bos || vocab_.bos_id >= 0, "SentencePiece vocabulary: add_bos is set but there is no BOS");
  KVF_CHECK(!vocab_.add_eos || vocab_.eos_id >= 0, "SentencePiece vocabulary: add_eos is set but there is no EOS");

  EndOfGenerationIds known;
  known.eos = vocab_.eos_id;
  eog_ = mark_end_of_generation(ids_, vocab_.token_types, known);

  byte_ids_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    auto it = ids_.find(hex);
    if (it == ids_.end()) it = ids_.find(std::string(1, (char)b));
    if (it != ids_.end()) byte_ids_[(size_t)b] = it->second;
  }
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = vocab_.token_types[i];
    if (!vocab_.tokens[i].empty() &&
        (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown))
      specials_.push_back((int32_t)i);
  }
  std::stable_sort(specials_.begin(), specials_.end(), [&](int32_t a, int32_t b) {
    return vocab_.tokens[(size_t)a].size() > vocab_.tokens[(size_t)b].size();
  });
}

void SpmTokenizer::check_id(int32_t id) const {
  KVF_CHECK(id >= 0 && id < vocab_size(), "token id ", id, " is outside the vocabulary of ", vocab_size(),
            " tokens");
}

bool SpmTokenizer::is_eog(int32_t id) const { return id >= 0 && id < vocab_size() && eog_[(size_t)id]; }

TokenType SpmTokenizer::token_type(int32_t id) const {
  check_id(id);
  return vocab_.token_types[(size_t)id];
}

bool SpmTokenizer::pair_priority(const std::string& merged, std::string_view left, std::string_view right,
                                 double& priority) const {
  if (!vocab_.merges.empty()) {
    std::string key;
    key.reserve(left.size() + right.size() + 1);
    key.append(left).append(" ").append(right);
    const auto it = ranks_.find(key);
    if (it == ranks_.end()) return false;
    priority = -(double)it->second;
    return true;
  }
  const auto it = ids_.find(merged);
  if (it == ids_.end()) return false;
  priority = vocab_.scores[(size_t)it->second];
  return true;
}

void SpmTokenizer::encode_text(const std::string& text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  for (size_t at = 0; at < text.size();) {
    const size_t len = std::min(utf8_length((uint8_t)text[at]), text.size() - at);
    const int index = (int)symbols.size();
    symbols.push_back({at, len, index - 1, at + len == text.size() ? -1 : index + 1});
    at += len;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[(size_t)left];
    const Symbol& r = symbols[(size_t)right];
    const std::string merged = text.substr(l.begin, l.size + r.size);
    double priority = 0;
    if (!pair_priority(merged, std::string_view(text).substr(l.begin, l.size),
                       std::string_view(text).substr(r.begin, r.size), priority))
      return;
    queue.push({priority, left, right, merged.size()});
  };
  for (int i = 1; i < (int)symbols.size(); ++i) consider(i - 1, i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[(size_t)c.left];
    Symbol& r = symbols[(size_t)c.right];
    if (l.size == 0 || r.size == 0 || l.size + r.size != c.size || l.next != c.right) continue;
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[(size_t)r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[(size_t)i].next) {
    const Symbol& s = symbols[(size_t)i];
    const auto it = ids_.find(text.substr(s.begin, s.size));
    if (it != ids_.end()) {
      out.push_back(it->second);
      continue;
    }
    for (size_t b = s.begin; b < s.begin + s.size; ++b) {
      const int32_t id = byte_ids_[(uint8_t)text[b]];
      if (id >= 0) {
        out.push_back(id);
      } else {
        KVF_CHECK(vocab_.unk_id >= 0, "SentencePiece vocabulary: byte 0x", std::hex, (int)(uint8_t)text[b],
                  " has no byte token and there is no unknown token");
        out.push_back(vocab_.unk_id);
        break;  // the unknown token stands for the whole character
      }
    }
  }
}

std::vector<int32_t> SpmTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  // Fragments: raw text (id -1) or a special token cut out of it.
  struct Fragment {
    std::string_view text;
    int32_t id;
  };
  std::vector<Fragment> fragments{{text, -1}};
  for (int32_t special : specials_) {
    const TokenType type = vocab_.token_types[(size_t)special];
    if (!parse_special && type != TokenType::UserDefined) continue;
    const std::string& needle = vocab_.tokens[(size_t)special];
    std::vector<Fragment> split;
    for (const Fragment& f : fragments) {
      if (f.id >= 0) {
        split.push_back(f);
        continue;
      }
      size_t from = 0;
      for (size_t hit = f.text.find(needle); hit != std::string_view::npos; hit = f.text.find(needle, from)) {
        if (hit > from) split.push_back({f.text.substr(from, hit - from), -1});
        split.push_back({{}, special});
        from = hit + needle.size();
      }
      if (from < f.text.size()) split.push_back({f.text.substr(from), -1});
    }
    fragments = std::move(split);
  }

  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  bool after_special = true;  // the start of the text counts as following a special token
  for (const Fragment& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
      after_special = true;
      continue;
    }
    if (f.text.empty()) continue;  // no text, no space prefix
    const std::string escaped = spaces_escaped(f.text);
    bool prefix = false;
    if (vocab_.add_space_prefix) {
      const bool spaced = escaped.compare(0, kSpace.size(), kSpace) == 0;
      switch (vocab_.prefix_rule) {
        case SpacePrefixRule::SentencePiece:
          prefix = after_special;
          break;
        case SpacePrefixRule::MetaspaceFirst:
          prefix = !spaced && f.text.data() == text.data();  // the piece at offset 0 of the text
          break;
        case SpacePrefixRule::MetaspaceAlways:
          prefix = !spaced;
          break;
      }
    }
    encode_text(prefix ? kSpace + escaped : escaped, out);
    after_special = false;
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

std::string SpmTokenizer::token_piece(int32_t id) const {
  check_id(id);
  const std::string& text = vocab_.tokens[(size_t)id];
  switch (vocab_.token_types[(size_t)id]) {
    case TokenType::Byte: {
      const int b = byte_of_token(text);
      return b >= 0 ? std::string(1, (char)b) : text;
    }
    case TokenType::Unknown:
      return "\xE2\x96\x85";  // U+2585, what llama.cpp shows for the unknown token
    case TokenType::Control:
      return text;
    case TokenType::Unused:
      return "";
    default:
      return spaces_unescaped(text);
  }
}

std::string SpmTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  size_t first = 0, last = ids.size();
  for (int32_t id : ids) check_id(id);
  if (skip_special && vocab_.add_bos && first < last && ids[first] == vocab_.bos_id) ++first;
  if (skip_special && vocab_.add_eos && first < last && ids[last - 1] == vocab_.eos_id) --last;
  std::string text;
  bool strip_space = vocab_.add_space_prefix;
  for (size_t i = first; i < last; ++i) {
    const int32_t id = ids[i];
    std::string piece =
        skip_special && vocab_.token_types[(size_t)id] == TokenType::Control ? std::string() : token_piece(id);
    if (strip_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    strip_space = false;
    text += piece;
  }
  return text;
}

}  // namespace kvf
