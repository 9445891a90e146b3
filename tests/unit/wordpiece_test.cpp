// WordPiece tokenizer on a tiny hand-made vocabulary: each BertTokenizer rule on its own (cleaning, CJK spacing,
// accents and case, punctuation, ## continuations, the 100-character limit, [UNK], special tokens in the text,
// truncation, padding), plus loading from a model folder.
#include "text/wordpiece.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace kvf {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string>& tiny_vocab() {
  static const std::vector<std::string> vocab = {
      "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff", "##able", "aff", "cafe",
      "naive", "Cafe", "中", "国", "a", "##a", "b", "##b", "!", ",", ".", "$", "^", "-", "¿", "«", "»", "[", "]",
      "sep", "x", "i\u0307", "ǆ", "##é"};
  return vocab;
}

// The tokens of `text` as one string, "hello world ##x" style, for readable failures.
std::string pieces(const WordPieceTokenizer& tok, const std::string& text) {
  std::string out;
  for (int32_t id : tok.tokenize(text)) out += (out.empty() ? "" : " ") + tok.token(id);
  return out;
}

WordPieceTokenizer uncased() { return WordPieceTokenizer(tiny_vocab(), WordPieceOptions{}); }

WordPieceTokenizer cased() {
  WordPieceOptions o;
  o.lowercase = false;
  o.strip_accents = false;
  return WordPieceTokenizer(tiny_vocab(), o);
}

TEST(WordPiece, GreedyLongestMatchWithContinuations) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, "unaffable"), "un ##aff ##able");
  EXPECT_EQ(pieces(tok, "aff"), "aff");  // a word start never takes the ## form
  EXPECT_EQ(pieces(tok, "aaa b"), "a ##a ##a b");
  EXPECT_EQ(pieces(tok, "hello world"), "hello world");
}

TEST(WordPiece, AWordWithAnUnmatchablePartIsOneUnk) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, "hellox"), "[UNK]");  // not "hello [UNK]"
  EXPECT_EQ(pieces(tok, "zzz hello"), "[UNK] hello");
  EXPECT_EQ(pieces(tok, "ab"), "a ##b");
}

TEST(WordPiece, PunctuationIsSplitOffIncludingAsciiSymbols) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, "hello,world!"), "hello , world !");
  EXPECT_EQ(pieces(tok, "a$b^a-b"), "a $ b ^ a - b");  // $ and ^ are Unicode symbols, BERT punctuation
  EXPECT_EQ(pieces(tok, "!!."), "! ! .");
  EXPECT_EQ(pieces(tok, "¿hello? «a»"), "¿ hello [UNK] « a »");  // Unicode P*; "?" is not in the vocabulary
}

TEST(WordPiece, LowercasesAndStripsAccents) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, "Café NAÏVE"), "cafe naive");
  EXPECT_EQ(pieces(tok, "cafe\u0301"), "cafe");        // already decomposed
  EXPECT_EQ(pieces(tok, "HeLLo WoRlD"), "hello world");
  EXPECT_EQ(pieces(tok, "Ǆ"), "ǆ");  // no decomposition: only case changes
}

TEST(WordPiece, CasedKeepsCaseAndAccents) {
  const auto tok = cased();
  EXPECT_EQ(pieces(tok, "Cafe"), "Cafe");
  EXPECT_EQ(pieces(tok, "Hello"), "[UNK]");
  EXPECT_EQ(pieces(tok, "café"), "[UNK]");  // "caf" is not a piece, so the word is unknown
  EXPECT_EQ(pieces(tok, "aé"), "a ##é");
}

TEST(WordPiece, LowercaseWithoutStrippingKeepsMarks) {
  WordPieceOptions o;
  o.strip_accents = false;
  const WordPieceTokenizer tok(tiny_vocab(), o);
  EXPECT_EQ(pieces(tok, "\u0130"), "i\u0307");  // İ lowercases to two characters
  EXPECT_EQ(pieces(tok, "CAFÉ"), "[UNK]");
}

TEST(WordPiece, CjkIdeographsBecomeWords) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, "中国"), "中 国");
  EXPECT_EQ(pieces(tok, "hello中国world"), "hello 中 国 world");
  WordPieceOptions o;
  o.split_cjk = false;
  EXPECT_EQ(pieces(WordPieceTokenizer(tiny_vocab(), o), "中国"), "[UNK]");  // one word; "##国" is no piece
}

TEST(WordPiece, CleaningDropsControlCharactersAndMapsWhitespace) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, std::string("hel\0lo", 6)), "hello");
  EXPECT_EQ(pieces(tok, "hel\x07lo wor\x7fld"), "hello world");
  EXPECT_EQ(pieces(tok, "hel\u200blo"), "hello");       // zero width space: format (Cf)
  EXPECT_EQ(pieces(tok, "hel\u00adlo"), "hello");       // soft hyphen: Cf
  EXPECT_EQ(pieces(tok, "hel\ufffdlo"), "hello");       // replacement character
  EXPECT_EQ(pieces(tok, "hel\ue000lo"), "hello");       // private use
  EXPECT_EQ(pieces(tok, "hel\x0blo wor\x0cld"), "hello world");  // VT and FF: dropped, not whitespace
  EXPECT_EQ(pieces(tok, "hel\xfflo"), "hello");         // invalid UTF-8 counts as U+FFFD
  EXPECT_EQ(pieces(tok, "\thello\n\r\nworld\u00a0a\u3000b\u2028x"), "hello world a b x");
  EXPECT_EQ(pieces(tok, "   "), "");
  EXPECT_EQ(pieces(tok, ""), "");
}

TEST(WordPiece, WordsOverTheCharacterLimitAreUnk) {
  const auto tok = uncased();
  const std::vector<int32_t> hundred = tok.tokenize(std::string(100, 'a'));
  ASSERT_EQ(hundred.size(), 100u);
  EXPECT_EQ(tok.token(hundred[0]), "a");
  EXPECT_EQ(tok.token(hundred[99]), "##a");
  EXPECT_EQ(pieces(tok, std::string(101, 'a')), "[UNK]");
  // The limit counts characters after normalisation, not bytes: 100 "é" are 100 characters.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "A\u0301";
  EXPECT_EQ(tok.tokenize(accented).size(), 100u);
  WordPieceOptions o;
  o.max_input_chars_per_word = 3;
  EXPECT_EQ(pieces(WordPieceTokenizer(tiny_vocab(), o), "aaa aaaa"), "a ##a ##a [UNK]");
}

TEST(WordPiece, SpecialTokensInTheTextAreKeptWhole) {
  const auto tok = uncased();
  EXPECT_EQ(pieces(tok, "hello [SEP] world"), "hello [SEP] world");
  EXPECT_EQ(pieces(tok, "a[SEP]b[MASK]"), "a [SEP] b [MASK]");
  EXPECT_EQ(pieces(tok, "[sep]"), "[ sep ]");  // matched before lowercasing, case-sensitively
  EXPECT_EQ(pieces(tok, "[[PAD]]"), "[ [PAD] ]");
}

TEST(WordPiece, EncodeAddsClsSepAndTruncates) {
  const auto tok = uncased();
  const int32_t cls = tok.id("[CLS]"), sep = tok.id("[SEP]"), a = tok.id("a"), b = tok.id("b");
  EXPECT_EQ(tok.encode("a b", 8), (std::vector<int32_t>{cls, a, b, sep}));
  EXPECT_EQ(tok.encode("a b a b a b", 5), (std::vector<int32_t>{cls, a, b, a, sep}));
  EXPECT_EQ(tok.encode("a b", 2), (std::vector<int32_t>{cls, sep}));
  EXPECT_EQ(tok.encode("", 8), (std::vector<int32_t>{cls, sep}));
  EXPECT_THROW(tok.encode("a", 1), Error);
}

TEST(WordPiece, BatchIsRightPaddedWithAMask) {
  const auto tok = uncased();
  const TokenBatch batch = tok.encode_batch({"a b a", "", "hello"}, 4);
  ASSERT_EQ(batch.rows, 3);
  ASSERT_EQ(batch.cols, 4);
  const int32_t cls = tok.id("[CLS]"), sep = tok.id("[SEP]"), pad = tok.pad_id();
  EXPECT_EQ(batch.ids, (std::vector<int32_t>{cls, tok.id("a"), tok.id("b"), sep,  //
                                             cls, sep, pad, pad,                   //
                                             cls, tok.id("hello"), sep, pad}));
  EXPECT_EQ(batch.mask, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(tok.encode_batch({}, 4).rows, 0);
}

TEST(WordPiece, BadVocabulariesAreRejected) {
  std::vector<std::string> dup = tiny_vocab();
  dup.push_back("hello");
  EXPECT_THAT([&] { WordPieceTokenizer(dup, {}); }, ::testing::ThrowsMessage<Error>(HasSubstr("'hello' appears")));
  std::vector<std::string> no_unk = tiny_vocab();
  no_unk[1] = "[UNKNOWN]";
  EXPECT_THAT([&] { WordPieceTokenizer(no_unk, {}); }, ::testing::ThrowsMessage<Error>(HasSubstr("'[UNK]'")));
  const auto tok = uncased();
  EXPECT_THROW(tok.token(-1), Error);
  EXPECT_THROW(tok.token(tok.vocab_size()), Error);
  EXPECT_THROW(tok.id("nope"), Error);
}

TEST(WordPiece, LoadsVocabAndConfigFromAFolder) {
  const std::string dir = ::testing::TempDir() + "kvf_wordpiece_load";
  std::filesystem::create_directories(dir);
  {
    std::ofstream vocab(dir + "/vocab.txt");
    for (const std::string& t : tiny_vocab()) vocab << t << "\r\n";  // CRLF line ends too
    std::ofstream config(dir + "/tokenizer_config.json");
    config << R"({"do_lower_case": false, "strip_accents": null, "unk_token": {"content": "[UNK]"}})";
  }
  const WordPieceTokenizer tok = WordPieceTokenizer::load(dir);
  EXPECT_EQ(tok.vocab_size(), (int32_t)tiny_vocab().size());
  EXPECT_FALSE(tok.options().lowercase);
  EXPECT_FALSE(tok.options().strip_accents);  // null follows do_lower_case
  EXPECT_EQ(pieces(tok, "Cafe hello"), "Cafe hello");
  EXPECT_NE(tok.hash(), uncased().hash());
  EXPECT_EQ(tok.hash(), cased().hash());

  std::ofstream(dir + "/tokenizer_config.json") << R"({"do_lower_case": "yes"})";
  EXPECT_THAT([&] { WordPieceTokenizer::load(dir); },
              ::testing::ThrowsMessage<Error>(HasSubstr("'do_lower_case' is not a boolean")));
  EXPECT_THROW(WordPieceTokenizer::load(dir + "/missing"), Error);
}

}  // namespace
}  // namespace kvf
