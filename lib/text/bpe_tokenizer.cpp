#include "text/bpe_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "text/end_of_generation.h"

namespace kvf {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes take the code points
// from U+0100 on, in byte order.
std::array<uint32_t, 256> byte_code_points() {
  std::array<uint32_t, 256> cpt{};
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    cpt[b] = printable ? b : next++;
  }
  return cpt;
}

// Code point and length of the character at text[i] when it lies below U+0180, where the byte alphabet lives;
// 0 otherwise.
size_t byte_char_at(const std::string& text, size_t i, uint32_t& cpt) {
  const uint8_t b0 = (uint8_t)text[i];
  if (b0 < 0x80) {
    cpt = b0;
    return 1;
  }
  if (b0 >= 0xC2 && b0 <= 0xC5 && i + 1 < text.size() && ((uint8_t)text[i + 1] & 0xC0) == 0x80) {
    cpt = ((b0 & 0x1Fu) << 6) | ((uint8_t)text[i + 1] & 0x3Fu);
    return 2;
  }
  return 0;
}

// Bytes of a token written in the byte alphabet. Characters outside it (a raw text some converters store) are
// copied as they are; llama.cpp writes an "[UNK_BYTE_...]" marker there instead.
std::string byte_level_decode(const std::string& text) {
  static const std::vector<int> byte_of = [] {
    std::vector<int> table(0x144, -1);
    const auto cpts = byte_code_points();
    for (int b = 0; b < 256; ++b) table[cpts[b]] = b;
    return table;
  }();
  std::string bytes;
  for (size_t i = 0; i < text.size();) {
    uint32_t cpt = 0;
    const size_t n = byte_char_at(text, i, cpt);
    if (n > 0 && cpt < byte_of.size() && byte_of[cpt] >= 0) {
      bytes += (char)byte_of[cpt];
      i += n;
    } else {
      const size_t len = std::max<size_t>(n, 1);
      bytes.append(text, i, len);
      i += len;
    }
  }
  return bytes;
}

// Control and unknown tokens: parse_special and skip_special decide about them.
bool is_special_type(TokenType type) { return type == TokenType::Control || type == TokenType::Unknown; }

// Tokens that stand for their text verbatim: cut out of the text before BPE and decoded as written.
bool is_verbatim_type(TokenType type) { return is_special_type(type) || type == TokenType::UserDefined; }

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t)left << 32 | (uint32_t)right; }

// llama.cpp's clean_up_tokenization_spaces, pass for pass, in place: drops the space before "?!.,", around a lone
// apostrophe and before "'s", "'m", "'re", "'ve".
void clean_up_spaces(std::string& text) {
  const size_t n1 = text.size();
  size_t total = n1 ? 1 : 0;
  for (size_t i = 1; i < n1; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    text[total++] = x;
  }
  const size_t n2 = total;
  total = n2 ? 1 : 0;
  for (size_t i = 1; i < n2; ++i) {
    const char x = text[i];
    if (x == '\'' && i + 1 < n2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
      --total;
      text[++i] = '\0';  // the space after is skipped
    }
    text[total++] = x;
  }
  const size_t n3 = total;
  total = n3 ? 1 : 0;
  for (size_t i = 1; i < n3; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
      const char x1 = text[i + 1];
      const char x2 = i + 2 < n3 ? text[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
    }
    text[total++] = x;
  }
  text.resize(total);
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> table;
    const auto cpts = byte_code_points();
    for (int b = 0; b < 256; ++b) {
      const uint32_t c = cpts[b];
      table[b] = c < 0x80 ? std::string(1, (char)c) : std::string{(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
    }
    return table;
  }();
  return chars[byte];
}

struct BpeTokenizer::Fragment {
  size_t begin = 0;
  size_t size = 0;
  int32_t token = -1;  // >= 0: a special token cut out of the text; else text[begin, begin + size)
};

// Buffers reused across the words of one encode call.
struct BpeTokenizer::Workspace {
  struct Symbol {
    int32_t id;  // token id; -1 for a byte without a token, -2 once merged into its left neighbour
    int32_t prev;
    int32_t next;
  };
  struct Pair {
    int32_t rank;
    int32_t left;  // symbol index
    int32_t left_id;
    int32_t right_id;
    int32_t result;
  };
  // Heap order: lowest rank first, then leftmost (llama.cpp's llm_bigram_bpe::comparator).
  static bool later(const Pair& a, const Pair& b) { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); }

  std::vector<Symbol> symbols;
  std::vector<Pair> heap;
  std::vector<std::string_view> words;
};

BpeTokenizer::BpeTokenizer(BpeVocabulary vocab) : vocab_(std::move(vocab)), pre_(vocab_.pre) {
  const int32_t n = vocab_size();
  KVF_CHECK(vocab_.token_types.size() == vocab_.tokens.size(), "BPE vocabulary: ", vocab_.token_types.size(),
            " token types for ", n, " tokens");
  ids_.reserve(n);
  for (int32_t id = 0; id < n; ++id) {
    const auto [it, fresh] = ids_.emplace(vocab_.tokens[id], id);
    KVF_CHECK(fresh, "BPE vocabulary: token '", vocab_.tokens[id], "' appears twice (ids ", it->second, " and ", id,
              ")");
  }
  mark_end_of_generation();

  for (int32_t id = 0; id < n; ++id) {
    if (is_verbatim_type(vocab_.token_types[id])) specials_.push_back(id);
  }
  std::stable_sort(specials_.begin(), specials_.end(), [&](int32_t a, int32_t b) {
    return vocab_.tokens[a].size() > vocab_.tokens[b].size();
  });

  // A merge whose parts or result are not tokens could never yield a token; such entries are skipped.
  merges_.reserve(vocab_.merges.size());
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const std::string& merge = vocab_.merges[rank];
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) continue;
    const auto left = ids_.find(merge.substr(0, space));
    const auto right = ids_.find(merge.substr(space + 1));
    const auto result = ids_.find(merge.substr(0, space) + merge.substr(space + 1));
    if (left == ids_.end() || right == ids_.end() || result == ids_.end()) continue;
    // The first (best) rank of a pair wins.
    merges_.emplace(pair_key(left->second, right->second), Merge{(int32_t)rank, result->second});
  }

  for (int b = 0; b < 256; ++b) {
    const auto it = ids_.find(byte_level_char((uint8_t)b));
    byte_ids_[b] = it == ids_.end() ? -1 : it->second;
  }

  pieces_.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    const TokenType type = vocab_.token_types[id];
    if (type == TokenType::Normal) {
      pieces_[id] = byte_level_decode(vocab_.tokens[id]);
    } else if (is_verbatim_type(type)) {
      pieces_[id] = vocab_.tokens[id];
    }  // byte, unused and undefined tokens render as nothing, as in llama.cpp's BPE path
  }
}

void BpeTokenizer::mark_end_of_generation() {
  EndOfGenerationIds known{vocab_.eos_id, vocab_.eot_id, vocab_.eom_id, vocab_.fim_pad_id, vocab_.fim_rep_id,
                           vocab_.fim_sep_id};
  eog_ = kvf::mark_end_of_generation(ids_, vocab_.token_types, known);
  vocab_.fim_pad_id = known.fim_pad, vocab_.fim_rep_id = known.fim_rep, vocab_.fim_sep_id = known.fim_sep;
}

void BpeTokenizer::check_id(int32_t id) const {
  KVF_CHECK(id >= 0 && id < vocab_size(), "token id ", id, " is outside the vocabulary of ", vocab_size(), " tokens");
}

bool BpeTokenizer::is_eog(int32_t id) const { return id >= 0 && id < vocab_size() && eog_[id]; }

TokenType BpeTokenizer::token_type(int32_t id) const {
  check_id(id);
  return vocab_.token_types[id];
}

std::string BpeTokenizer::token_piece(int32_t id) const {
  check_id(id);
  return pieces_[id];
}

// llama.cpp's tokenizer_st_partition: each special token in turn, longest first, is cut out of every stretch of
// text the earlier ones left.
std::vector<BpeTokenizer::Fragment> BpeTokenizer::split_special(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments, next;
  if (!text.empty()) fragments.push_back({0, text.size(), -1});
  for (const int32_t id : specials_) {
    if (!parse_special && is_special_type(vocab_.token_types[id])) continue;
    const std::string& special = vocab_.tokens[id];
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token >= 0) {
        next.push_back(fragment);
        continue;
      }
      const std::string_view stretch = text.substr(0, fragment.begin + fragment.size);
      size_t begin = fragment.begin;
      for (size_t at; (at = stretch.find(special, begin)) != std::string_view::npos; begin = at + special.size()) {
        if (at > begin) next.push_back({begin, at - begin, -1});
        next.push_back({0, 0, id});
      }
      if (begin < stretch.size()) next.push_back({begin, stretch.size() - begin, -1});
    }
    fragments.swap(next);
  }
  return fragments;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  Workspace work;
  for (const Fragment& fragment : split_special(text, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      continue;
    }
    std::string clean = to_llama_utf8(text.substr(fragment.begin, fragment.size));
    if (vocab_.nfc) clean = to_nfc(clean);
    work.words.clear();
    pre_.split(clean, work.words);
    for (const std::string_view word : work.words) encode_word(word, work, out);
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

void BpeTokenizer::encode_word(std::string_view word, Workspace& work, std::vector<int32_t>& out) const {
  if (pre_.config().ignore_merges) {
    std::string spelled;
    for (const char c : word) spelled += byte_level_char((uint8_t)c);
    const auto it = ids_.find(spelled);
    if (it != ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const int32_t n = (int32_t)word.size();
  auto& symbols = work.symbols;
  symbols.resize(n);
  for (int32_t i = 0; i < n; ++i) symbols[i] = {byte_ids_[(uint8_t)word[i]], i - 1, i + 1 < n ? i + 1 : -1};

  auto& heap = work.heap;
  heap.clear();
  const auto consider = [&](int32_t left) {
    if (left < 0 || symbols[left].next < 0) return;
    const int32_t left_id = symbols[left].id, right_id = symbols[symbols[left].next].id;
    if (left_id < 0 || right_id < 0) return;
    const auto it = merges_.find(pair_key(left_id, right_id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, left_id, right_id, it->second.result});
    std::push_heap(heap.begin(), heap.end(), Workspace::later);
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Workspace::later);
    const Workspace::Pair pair = heap.back();
    heap.pop_back();
    auto& left = symbols[pair.left];
    // Stale when either side has merged since: a symbol's id fixes its span, so equal ids mean an unchanged pair.
    if (left.id != pair.left_id || left.next < 0 || symbols[left.next].id != pair.right_id) continue;
    auto& right = symbols[left.next];
    left.id = pair.result;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = pair.left;
    right.id = -2;
    consider(left.prev);
    consider(pair.left);
  }
  // A byte the vocabulary has no token for yields nothing, as in llama.cpp.
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) {
    if (symbols[i].id >= 0) out.push_back(symbols[i].id);
  }
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string text;
  for (const int32_t id : ids) {
    check_id(id);
    if (skip_special && is_special_type(vocab_.token_types[id])) continue;
    text += pieces_[id];
  }
  if (pre_.config().clean_spaces) clean_up_spaces(text);
  return text;
}

}  // namespace kvf
