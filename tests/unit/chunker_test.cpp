// The chunker with fake tokenizers (no model): limits, boundary preferences, UTF-8 safety, titles, determinism.
#include "text/chunker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace kvf {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// One token per whitespace-separated word and one per newline: close enough to BPE for boundary tests.
std::vector<int32_t> word_tokens(std::string_view text) {
  std::vector<int32_t> ids;
  bool in_word = false;
  for (char c : text) {
    if (c == '\n') ids.push_back(1);
    if (is_space(c)) {
      in_word = false;
    } else if (!in_word) {
      ids.push_back(2);
      in_word = true;
    }
  }
  return ids;
}

// One token per UTF-8 character that is not whitespace: long runs without spaces need cuts inside "words".
std::vector<int32_t> character_tokens(std::string_view text) {
  std::vector<int32_t> ids;
  for (char c : text) {
    if (((unsigned char)c & 0xC0) != 0x80 && !is_space(c)) ids.push_back((unsigned char)c);
  }
  return ids;
}

// One token per byte, spaces included: the chunker's estimates (a single space costs nothing) fall short.
std::vector<int32_t> byte_tokens(std::string_view text) { return std::vector<int32_t>(text.size(), 7); }

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if (((unsigned char)s[i + k] & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string sentence(int words, int seed) {
  std::string s;
  for (int w = 0; w < words; ++w) s += (w ? " w" : "W") + std::to_string(seed * 100 + w);
  return s + ".";
}

std::string paragraph(int sentences, int words_each, int seed) {
  std::string p;
  for (int i = 0; i < sentences; ++i) p += (i ? " " : "") + sentence(words_each, seed * 10 + i);
  return p;
}

std::string chunk_text(std::string_view text, const TextChunk& c) {
  return std::string(text.substr(c.begin, c.end - c.begin));
}

// What every chunking must satisfy: in order, trimmed, separated by whitespace only, covering all non-space text,
// tokens of the rendered chunk, within the hard maximum.
void expect_valid_chunks(std::string_view title, std::string_view text, const std::vector<TextChunk>& chunks,
                         const ChunkerOptions& options, const Tokenize& tokenize) {
  ASSERT_FALSE(chunks.empty());
  size_t pos = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    SCOPED_TRACE("chunk " + std::to_string(i));
    const TextChunk& c = chunks[i];
    ASSERT_LT(c.begin, c.end);
    ASSERT_LE(c.end, text.size());
    for (size_t k = pos; k < c.begin; ++k) EXPECT_TRUE(is_space(text[k])) << "non-space text skipped at " << k;
    EXPECT_FALSE(is_space(text[c.begin]));
    EXPECT_FALSE(is_space(text[c.end - 1]));
    EXPECT_TRUE(valid_utf8(chunk_text(text, c)));
    EXPECT_EQ(c.tokens, tokenize(render_chunk(title, chunk_text(text, c))));
    EXPECT_LE(c.tokens.size(), options.hard_max());
    pos = c.end;
  }
  for (size_t k = pos; k < text.size(); ++k) EXPECT_TRUE(is_space(text[k])) << "text left over at " << k;
}

TEST(RenderChunk, TitleLineThenText) {
  EXPECT_EQ(render_chunk("Paris", "Paris is the capital."), "Title: Paris\nParis is the capital.\n\n");
  EXPECT_EQ(render_chunk("", "No title here."), "No title here.\n\n");
}

TEST(ChunkerOptions, DefaultsAndChecks) {
  ChunkerOptions o;
  EXPECT_EQ(o.chunk_tokens, 256u);
  EXPECT_EQ(o.hard_max(), 320u);
  o.max_tokens = 300;
  EXPECT_EQ(o.hard_max(), 300u);
  o.max_tokens = 100;
  EXPECT_THROW(o.check(), Error);
  o.chunk_tokens = 0;
  o.max_tokens = 0;
  EXPECT_THROW(o.check(), Error);
}

TEST(Chunker, ShortDocumentIsOneTrimmedChunk) {
  const std::string text = "\n  Two short sentences. Nothing more.  \n";
  const auto chunks = chunk_document("", text, {}, word_tokens);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunk_text(text, chunks[0]), "Two short sentences. Nothing more.");
  expect_valid_chunks("", text, chunks, {}, word_tokens);
}

TEST(Chunker, BlankDocumentHasNoChunks) {
  EXPECT_TRUE(chunk_document("T", "", {}, word_tokens).empty());
  EXPECT_TRUE(chunk_document("T", " \n\t ", {}, word_tokens).empty());
}

TEST(Chunker, CutsAtParagraphBreaks) {
  // Paragraphs of about 90 tokens with sentence ends everywhere: only the blank lines should be cut.
  std::string text;
  for (int p = 0; p < 12; ++p) text += (p ? "\n\n" : "") + paragraph(6, 15, p);
  ChunkerOptions o;
  o.chunk_tokens = 200;
  const auto chunks = chunk_document("", text, o, word_tokens);
  expect_valid_chunks("", text, chunks, o, word_tokens);
  EXPECT_GE(chunks.size(), 4u);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_EQ(text.substr(chunks[i].end, 2), "\n\n") << "chunk " << i << " does not end at a paragraph break";
  }
}

TEST(Chunker, CutsAtSentenceEndsWithinAParagraph) {
  const std::string text = paragraph(40, 12, 1);  // one paragraph of 480 words
  ChunkerOptions o;
  o.chunk_tokens = 64;
  const auto chunks = chunk_document("", text, o, word_tokens);
  expect_valid_chunks("", text, chunks, o, word_tokens);
  EXPECT_GE(chunks.size(), 7u);
  for (size_t i = 0; i < chunks.size(); ++i) EXPECT_EQ(text[chunks[i].end - 1], '.') << "chunk " << i;
}

TEST(Chunker, SentenceEndMayCarryClosingQuotes) {
  // Sentences of 10 words ending in ." or .) must count as sentence ends; cut nowhere else.
  std::string text;
  for (int i = 0; i < 30; ++i) {
    text += (i ? " " : "") + sentence(10, i) + (i % 2 ? "\"" : ")");
  }
  ChunkerOptions o;
  o.chunk_tokens = 32;
  const auto chunks = chunk_document("", text, o, word_tokens);
  expect_valid_chunks("", text, chunks, o, word_tokens);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    const char last = text[chunks[i].end - 1];
    EXPECT_TRUE(last == '"' || last == ')') << "chunk " << i;
    EXPECT_EQ(text[chunks[i].end - 2], '.');
  }
}

TEST(Chunker, FallsBackToWhitespaceInALongSentence) {
  std::string text = "start";
  for (int i = 0; i < 999; ++i) text += " word" + std::to_string(i);
  ChunkerOptions o;
  o.chunk_tokens = 100;
  const auto chunks = chunk_document("", text, o, word_tokens);
  expect_valid_chunks("", text, chunks, o, word_tokens);
  EXPECT_EQ(chunks.size(), 11u);  // 1,000 words and each chunk's closing blank line (2 tokens here), aim 100
  for (const TextChunk& c : chunks) {
    EXPECT_GE(c.tokens.size(), 75u);  // balanced around the aim, not a tiny tail
    EXPECT_TRUE(c.end == text.size() || text[c.end] == ' ');
  }
}

TEST(Chunker, BalancesADocumentJustOverTheMaximum) {
  // 330 tokens with aim 256 and maximum 320: two halves, not 256 + 74.
  const std::string text = paragraph(33, 10, 3);
  const auto chunks = chunk_document("", text, {}, word_tokens);
  expect_valid_chunks("", text, chunks, {}, word_tokens);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_NEAR((double)chunks[0].tokens.size(), 165.0, 20.0);
  EXPECT_NEAR((double)chunks[1].tokens.size(), 165.0, 20.0);
}

TEST(Chunker, KeepsADocumentUnderTheMaximumWhole) {
  const std::string text = paragraph(30, 10, 4);  // 300 tokens: above the aim, under the maximum
  const auto chunks = chunk_document("", text, {}, word_tokens);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].tokens.size(), 302u);  // and the closing blank line
}

TEST(Chunker, NeverCutsInsideAUtf8Character) {
  // No whitespace at all: 2-, 3- and 4-byte characters, cut only between characters.
  std::string text;
  const char* pieces[] = {"漢字", "かな", "é", "ü", "😀", "中文", "ß", "𝄞"};
  for (int i = 0; i < 600; ++i) text += pieces[i % 8];
  ChunkerOptions o;
  o.chunk_tokens = 50;
  o.max_tokens = 60;
  const auto chunks = chunk_document("", text, o, character_tokens);
  expect_valid_chunks("", text, chunks, o, character_tokens);
  std::string joined;
  for (const TextChunk& c : chunks) joined += chunk_text(text, c);
  EXPECT_EQ(joined, text);
}

TEST(Chunker, MixedScriptsWithSpaces) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += (i % 7 == 6 ? "Ünïcödé straße. " : "日本語のテキスト ") + std::to_string(i) + " ";
  ChunkerOptions o;
  o.chunk_tokens = 40;
  const auto chunks = chunk_document("Titel – Überblick", text, o, word_tokens);
  expect_valid_chunks("Titel – Überblick", text, chunks, o, word_tokens);
  EXPECT_GT(chunks.size(), 5u);
}

TEST(Chunker, TitleCountsTowardsTheMaximum) {
  const std::string title = "A rather long title of nine words in total";
  const std::string text = paragraph(50, 8, 5);
  ChunkerOptions o;
  o.chunk_tokens = 40;
  o.max_tokens = 50;
  const auto chunks = chunk_document(title, text, o, word_tokens);
  expect_valid_chunks(title, text, chunks, o, word_tokens);
  for (const TextChunk& c : chunks) EXPECT_GE(c.tokens.size(), 10u + 8u);  // the title and at least a sentence
}

TEST(Chunker, TitleAloneOverTheMaximumIsAnError) {
  ChunkerOptions o;
  o.chunk_tokens = 8;
  o.max_tokens = 10;
  try {
    chunk_document("one two three four five six seven eight nine ten eleven", paragraph(5, 10, 6), o, word_tokens);
    FAIL() << "expected kvf::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("title"), std::string::npos) << e.what();
  }
}

TEST(Chunker, RecoversWhenEstimatesFallShort) {
  // Byte tokens: every space is a token the estimate leaves out, yet no chunk may pass the maximum.
  const std::string text = paragraph(60, 9, 7);
  ChunkerOptions o;
  o.chunk_tokens = 200;
  const auto chunks = chunk_document("Short title", text, o, byte_tokens);
  expect_valid_chunks("Short title", text, chunks, o, byte_tokens);
}

TEST(Chunker, IsDeterministic) {
  std::string text;
  for (int p = 0; p < 8; ++p) text += paragraph(3 + p % 4, 7 + p, p) + (p % 3 ? "\n\n" : " ");
  ChunkerOptions o;
  o.chunk_tokens = 48;
  const auto a = chunk_document("T", text, o, word_tokens);
  const auto b = chunk_document("T", text, o, word_tokens);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].begin, b[i].begin);
    EXPECT_EQ(a[i].end, b[i].end);
    EXPECT_EQ(a[i].tokens, b[i].tokens);
  }
}

}  // namespace
}  // namespace kvf
