#include "text/chunker.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace kvf {
namespace {

// How good a place to cut: the stronger, the more the chunker prefers it.
enum Strength : int { kInsideWord = 0, kSpace = 1, kSentence = 2, kParagraph = 3, kEndOfText = 4 };

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_continuation_byte(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

// A run of whitespace between two words.
struct Gap {
  size_t begin = 0;
  size_t end = 0;
  Strength strength = kSpace;
};

// Does the text before `pos` end a sentence: . ! or ? possibly followed by closing quotes or brackets.
bool ends_sentence(std::string_view text, size_t pos) {
  static constexpr std::string_view kClosers[] = {"\"", "'", ")", "]",
                                                  "\xE2\x80\x9D" /* ” */, "\xE2\x80\x99" /* ’ */};
  bool stripped = true;
  while (stripped && pos > 0) {
    stripped = false;
    for (std::string_view closer : kClosers) {
      if (pos >= closer.size() && text.substr(pos - closer.size(), closer.size()) == closer) {
        pos -= closer.size();
        stripped = true;
        break;
      }
    }
  }
  return pos > 0 && (text[pos - 1] == '.' || text[pos - 1] == '!' || text[pos - 1] == '?');
}

// The whitespace runs strictly inside [begin, end), which starts and ends outside whitespace.
std::vector<Gap> find_gaps(std::string_view text, size_t begin, size_t end) {
  std::vector<Gap> gaps;
  for (size_t i = begin; i < end;) {
    if (!is_space(text[i])) {
      ++i;
      continue;
    }
    Gap gap{i, i, kSpace};
    while (gap.end < end && is_space(text[gap.end])) ++gap.end;
    if (std::count(text.begin() + (std::ptrdiff_t)gap.begin, text.begin() + (std::ptrdiff_t)gap.end, '\n') >= 2) {
      gap.strength = kParagraph;
    } else if (ends_sentence(text, gap.begin)) {
      gap.strength = kSentence;
    }
    gaps.push_back(gap);
    i = gap.end;
  }
  return gaps;
}

// A piece of text that is never cut, with its token count on its own and what precedes it.
struct Unit {
  size_t begin = 0;
  size_t end = 0;
  size_t tokens = 0;
  Strength cut_before = kInsideWord;  // how good a place to cut just before this unit
  size_t gap_tokens = 0;              // estimated tokens of the whitespace before it
};

class Splitter {
 public:
  Splitter(std::string_view title, std::string_view text, const ChunkerOptions& options, const Tokenize& tokenize)
      : title_(title), text_(text), tokenize_(tokenize), max_(options.hard_max()), target_(options.chunk_tokens) {}

  std::vector<TextChunk> run() {
    size_t begin = 0;
    size_t end = text_.size();
    while (begin < end && is_space(text_[begin])) ++begin;
    while (end > begin && is_space(text_[end - 1])) --end;
    if (begin == end) return {};
    // Most documents fit in one chunk: one tokenization settles them.
    TextChunk whole{begin, end, tokenize_(render_chunk(title_, text_.substr(begin, end - begin)))};
    if (whole.tokens.size() <= max_) return {std::move(whole)};
    // The title and the closing separator; +1 because rendered alone their newlines can merge into one token
    // that a text between them keeps apart.
    title_tokens_ = tokenize_(render_chunk(title_, "")).size() + 1;
    KVF_CHECK(title_tokens_ < max_, "chunker: the title '", title_, "' takes ", title_tokens_,
              " tokens, leaving no room under the maximum of ", max_, " tokens per chunk");
    gaps_ = find_gaps(text_, begin, end);
    cut(begin, end, kEndOfText, 0, whole.tokens.size() - title_tokens_);
    prefix_sums();
    return pack();
  }

 private:
  // [begin, end) as one unit when it fits under the maximum with the title, else cut().
  void split(size_t begin, size_t end, Strength cut_before, size_t gap_tokens) {
    const size_t tokens = tokenize_(text_.substr(begin, end - begin)).size();
    if (title_tokens_ + tokens <= max_) {
      units_.push_back({begin, end, tokens, cut_before, gap_tokens});
    } else {
      cut(begin, end, cut_before, gap_tokens, tokens);
    }
  }

  // Cuts [begin, end), which does not fit, at all its strongest gaps and splits the pieces; a run without
  // whitespace is halved on a character boundary.
  void cut(size_t begin, size_t end, Strength cut_before, size_t gap_tokens, size_t tokens) {
    const auto by_begin = [](const Gap& g, size_t pos) { return g.begin < pos; };
    const auto first = std::lower_bound(gaps_.begin(), gaps_.end(), begin, by_begin);
    const auto last = std::lower_bound(first, gaps_.end(), end, by_begin);
    if (first != last) {
      const Strength strongest =
          std::max_element(first, last, [](const Gap& a, const Gap& b) { return a.strength < b.strength; })->strength;
      size_t piece = begin;
      for (auto gap = first; gap != last; ++gap) {
        if (gap->strength != strongest) continue;
        split(piece, gap->begin, cut_before, gap_tokens);
        piece = gap->end;
        cut_before = gap->strength;
        gap_tokens = gap_cost(*gap);
      }
      split(piece, end, cut_before, gap_tokens);
      return;
    }
    size_t mid = begin + (end - begin) / 2;
    while (mid > begin && is_continuation_byte(text_[mid])) --mid;
    if (mid == begin) {  // a single character: cannot be cut; pack() reports it if it really does not fit
      units_.push_back({begin, end, tokens, cut_before, gap_tokens});
      return;
    }
    split(begin, mid, cut_before, gap_tokens);
    split(mid, end, kInsideWord, 0);
  }

  // A single space joins the next word's token ("Ġword"); other whitespace costs about one token of its own.
  size_t gap_cost(const Gap& gap) const { return gap.end - gap.begin == 1 && text_[gap.begin] == ' ' ? 0 : 1; }

  void prefix_sums() {
    unit_tokens_.assign(1, 0);
    gap_tokens_.assign(1, 0);
    for (const Unit& u : units_) {
      unit_tokens_.push_back(unit_tokens_.back() + u.tokens);
      gap_tokens_.push_back(gap_tokens_.back() + u.gap_tokens);
    }
  }

  // Estimated tokens of the rendered chunk made of units [i, j).
  size_t estimate(size_t i, size_t j) const {
    return title_tokens_ + unit_tokens_[j] - unit_tokens_[i] + gap_tokens_[j] - gap_tokens_[i + 1];
  }

  Strength cut_strength(size_t j) const { return j == units_.size() ? kEndOfText : units_[j].cut_before; }

  // The end (exclusive unit index) of the chunk starting at unit i whose estimate stays under cap: the rest of the
  // text if it fits; otherwise the strongest cut whose size is at least 3/4 of a balanced share of the rest,
  // nearest that share among equally strong ones.
  size_t choose_end(size_t i, size_t cap) const {
    const size_t n_units = units_.size();
    const size_t rest = estimate(i, n_units);
    if (rest <= cap) return n_units;
    // Every chunk repeats the title: only the body is shared out.
    const size_t body = rest - title_tokens_;
    const size_t body_per_chunk = target_ > title_tokens_ ? target_ - title_tokens_ : 1;
    const size_t n_chunks = std::max<size_t>(2, (body + body_per_chunk - 1) / body_per_chunk);
    const size_t share = title_tokens_ + body / n_chunks;
    size_t best = i + 1;
    bool found = false;
    for (size_t j = i + 1; j <= n_units && estimate(i, j) <= cap; ++j) {
      const size_t size = estimate(i, j);
      if (size * 4 < share * 3) {
        if (!found) best = j;  // nothing large enough yet: the largest that fits
        continue;
      }
      const auto distance = [&](size_t k) { return std::abs((long long)estimate(i, k) - (long long)share); };
      if (!found || cut_strength(j) > cut_strength(best) ||
          (cut_strength(j) == cut_strength(best) && distance(j) < distance(best))) {
        best = j;
        found = true;
      }
    }
    return best;
  }

  std::vector<TextChunk> pack() const {
    std::vector<TextChunk> chunks;
    for (size_t i = 0; i < units_.size();) {
      size_t cap = max_;
      for (;;) {
        const size_t j = choose_end(i, cap);
        TextChunk chunk{units_[i].begin, units_[j - 1].end, {}};
        chunk.tokens = tokenize_(render_chunk(title_, text_.substr(chunk.begin, chunk.end - chunk.begin)));
        if (chunk.tokens.size() <= max_) {
          chunks.push_back(std::move(chunk));
          i = j;
          break;
        }
        // The estimate was short: try again below it (each unit has a token, so this ends at one unit).
        KVF_CHECK(j > i + 1, "chunker: the text '",
                  text_.substr(chunk.begin, std::min<size_t>(chunk.end - chunk.begin, 40)), "' takes ",
                  chunk.tokens.size(), " tokens with its title, above the maximum of ", max_);
        cap = estimate(i, j) - 1;
      }
    }
    return chunks;
  }

  std::string_view title_;
  std::string_view text_;
  const Tokenize& tokenize_;
  size_t max_;
  size_t target_;
  size_t title_tokens_ = 0;
  std::vector<Gap> gaps_;
  std::vector<Unit> units_;
  std::vector<size_t> unit_tokens_;  // prefix sums over units_
  std::vector<size_t> gap_tokens_;
};

}  // namespace

std::string render_chunk(std::string_view title, std::string_view text) {
  std::string out;
  out.reserve(title.size() + text.size() + 10);
  if (!title.empty()) out.append("Title: ").append(title).append("\n");
  out.append(text).append("\n\n");
  return out;
}

void ChunkerOptions::check() const {
  KVF_CHECK(chunk_tokens > 0, "chunker: chunk_tokens must be positive, got ", chunk_tokens);
  KVF_CHECK(hard_max() >= chunk_tokens, "chunker: max_tokens ", hard_max(), " is below chunk_tokens ", chunk_tokens);
}

std::vector<TextChunk> chunk_document(std::string_view title, std::string_view text, const ChunkerOptions& options,
                                      const Tokenize& tokenize) {
  options.check();
  return Splitter(title, text, options, tokenize).run();
}

}  // namespace kvf
