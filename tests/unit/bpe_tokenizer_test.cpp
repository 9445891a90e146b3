#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "text/bpe_tokenizer.h"
#include "text/pretokenizer.h"

namespace kvf {
namespace {

// A hand-made vocabulary: the 256 byte tokens (id = byte), then one token per merge result, then `extra`.
BpeVocabulary tiny_vocabulary(const std::vector<std::string>& merges,
                              const std::vector<std::pair<std::string, TokenType>>& extra = {},
                              const std::string& pre = "smollm") {
  BpeVocabulary vocab;
  vocab.pre = pre;
  const auto add = [&](const std::string& text, TokenType type) {
    for (const std::string& t : vocab.tokens) {
      if (t == text) return;
    }
    vocab.tokens.push_back(text);
    vocab.token_types.push_back(type);
  };
  for (int b = 0; b < 256; ++b) add(byte_level_char((uint8_t)b), TokenType::Normal);
  for (const std::string& merge : merges) {
    const size_t space = merge.find(' ');
    add(merge.substr(0, space) + merge.substr(space + 1), TokenType::Normal);
  }
  for (const auto& [text, type] : extra) add(text, type);
  vocab.merges = merges;
  return vocab;
}

int32_t id_of(const BpeTokenizer& tok, const std::string& text) {
  const auto& tokens = tok.vocabulary().tokens;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == text) return (int32_t)i;
  }
  ADD_FAILURE() << "no token '" << text << "'";
  return -1;
}

std::vector<std::string> split(const std::string& pre, const std::string& text) {
  std::vector<std::string_view> words;
  PreTokenizer(pre).split(text, words);
  return std::vector<std::string>(words.begin(), words.end());
}

TEST(BpeTokenizer, ByteLevelAlphabetIsGpt2s) {
  EXPECT_EQ(byte_level_char('a'), "a");
  EXPECT_EQ(byte_level_char('!'), "!");
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(byte_level_char(0x00), "\xC4\x80");  // U+0100 'Ā'
  EXPECT_EQ(byte_level_char(0xA9), "\xC2\xA9");  // '©' stands for itself
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");  // U+0143, the last stand-in
  for (int a = 0; a < 256; ++a) {
    for (int b = a + 1; b < 256; ++b) ASSERT_NE(byte_level_char((uint8_t)a), byte_level_char((uint8_t)b));
  }
}

TEST(BpeTokenizer, MergesLowestRankFirstNotLeftToRight) {
  const BpeTokenizer tok(tiny_vocabulary({"b c", "a b", "bc d"}));
  // Left to right would give "ab" + "c" + "d"; rank order merges "bc" first, then "bcd".
  EXPECT_EQ(tok.encode("abcd", false, false), (std::vector<int32_t>{'a', id_of(tok, "bcd")}));
  EXPECT_EQ(tok.encode("abc", false, false), (std::vector<int32_t>{'a', id_of(tok, "bc")}));
  EXPECT_EQ(tok.encode("ab", false, false), (std::vector<int32_t>{id_of(tok, "ab")}));
}

TEST(BpeTokenizer, EqualRanksMergeLeftmostFirst) {
  const BpeTokenizer tok(tiny_vocabulary({"a a"}));
  const int32_t aa = id_of(tok, "aa");
  EXPECT_EQ(tok.encode("aaa", false, false), (std::vector<int32_t>{aa, 'a'}));
  EXPECT_EQ(tok.encode("aaaa", false, false), (std::vector<int32_t>{aa, aa}));
}

TEST(BpeTokenizer, MergesStayWithinPreTokenizedWords) {
  const BpeTokenizer tok(tiny_vocabulary({"a \xC4\xA0", "\xC4\xA0 b"}));  // "a " and " b"
  // "a b" splits into "a" and " b": the higher-priority "a " merge would cross the word boundary.
  EXPECT_EQ(tok.encode("a b", false, false), (std::vector<int32_t>{'a', id_of(tok, "\xC4\xA0" "b")}));
}

TEST(BpeTokenizer, BytesMapToTheirByteLevelTokens) {
  const BpeTokenizer tok(tiny_vocabulary({}));
  // Without merges every byte is its own token: é is C3 A9, the emoji four bytes.
  EXPECT_EQ(tok.encode("\xC3\xA9", false, false), (std::vector<int32_t>{0xC3, 0xA9}));
  EXPECT_EQ(tok.encode("\xF0\x9F\x91\x8D", false, false), (std::vector<int32_t>{0xF0, 0x9F, 0x91, 0x8D}));
  EXPECT_EQ(tok.encode(" \n", false, false), (std::vector<int32_t>{' ', '\n'}));
  EXPECT_EQ(tok.token_piece(' '), " ");
  EXPECT_EQ(tok.token_piece(0xC3), "\xC3");
}

TEST(BpeTokenizer, BytesWithoutATokenAreDroppedLikeLlamaCpp) {
  BpeVocabulary vocab = tiny_vocabulary({});
  vocab.tokens[0x04] = "unused-4";  // the byte 0x04 now has no token
  const BpeTokenizer tok(std::move(vocab));
  EXPECT_EQ(tok.encode("a\x04" "b", false, false), (std::vector<int32_t>{'a', 'b'}));
}

TEST(BpeTokenizer, InvalidUtf8BecomesReplacementCharacter) {
  const BpeTokenizer tok(tiny_vocabulary({}));
  EXPECT_EQ(tok.decode(tok.encode("a\xFF" "b", false, false)), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(to_llama_utf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(to_llama_utf8("\xE3\x81"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated: each byte on its own
  EXPECT_EQ(to_llama_utf8(std::string("\xC0\x80", 2)), std::string(1, '\0'));  // overlong NUL, read as NUL
  EXPECT_EQ(to_llama_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(to_llama_utf8("caf\xC3\xA9 \xF0\x9F\x91\x8D"), "caf\xC3\xA9 \xF0\x9F\x91\x8D");
}

TEST(BpeTokenizer, SpecialTokensAreCutOutOnlyWhenParsed) {
  const BpeTokenizer tok(
      tiny_vocabulary({}, {{"<|im_start|>", TokenType::Control}, {"<tool>", TokenType::UserDefined}}));
  const int32_t start = id_of(tok, "<|im_start|>"), tool = id_of(tok, "<tool>");
  EXPECT_EQ(tok.encode("x<|im_start|>y", false, true), (std::vector<int32_t>{'x', start, 'y'}));
  const std::vector<int32_t> plain = tok.encode("x<|im_start|>y", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), start), 0);
  EXPECT_EQ(tok.decode(plain), "x<|im_start|>y");
  // User-defined tokens are cut out either way.
  EXPECT_EQ(tok.encode("a<tool>b", false, false), (std::vector<int32_t>{'a', tool, 'b'}));
  EXPECT_EQ(tok.encode("<|im_start|><|im_start|>", false, true), (std::vector<int32_t>{start, start}));
}

TEST(BpeTokenizer, LongestSpecialTokenWins) {
  const BpeTokenizer tok(tiny_vocabulary({}, {{"<a>", TokenType::Control}, {"<a><b>", TokenType::Control}}));
  const int32_t a = id_of(tok, "<a>"), ab = id_of(tok, "<a><b>");
  EXPECT_EQ(tok.encode("<a><b><a>", false, true), (std::vector<int32_t>{ab, a}));
  EXPECT_EQ(tok.encode("<a><a><b>", false, true), (std::vector<int32_t>{a, ab}));
}

TEST(BpeTokenizer, DecodeRendersOrSkipsSpecialTokens) {
  const BpeTokenizer tok(tiny_vocabulary({}, {{"<|im_end|>", TokenType::Control}, {"<tool>", TokenType::UserDefined}}));
  const std::vector<int32_t> ids = {'x', id_of(tok, "<|im_end|>"), id_of(tok, "<tool>"), 'y'};
  EXPECT_EQ(tok.decode(ids), "x<|im_end|><tool>y");
  EXPECT_EQ(tok.decode(ids, true), "x<tool>y");  // user-defined tokens are text
  EXPECT_THROW(tok.decode({tok.vocab_size()}), Error);
}

TEST(BpeTokenizer, DecodeInvertsEncodeOnRandomUtf8) {
  const BpeTokenizer tok(tiny_vocabulary({"\xC4\xA0 t", "h e", "\xC4\xA0t he", "e r", "1 2"},
                                         {{"<|im_end|>", TokenType::Control}}));
  std::mt19937 rng(42);
  const auto code_point = [&]() -> uint32_t {
    switch (rng() % 6) {
      case 0: return 0x20 + rng() % 0x60;  // ASCII
      case 1: return " \t\n\r'"[rng() % 5];
      case 2: return rng() % 0x80;  // controls included
      case 3: return 0x80 + rng() % 0x780;
      case 4: {
        const uint32_t c = 0x800 + rng() % 0xF800;
        return c >= 0xD800 && c <= 0xDFFF ? 0x4E2D : c;  // no surrogates
      }
      default: return 0x10000 + rng() % 0x100000;
    }
  };
  for (int n = 0; n < 2000; ++n) {
    std::string text;
    for (int k = rng() % 24; k > 0; --k) {
      const uint32_t c = code_point();
      if (c < 0x80) {
        text += (char)c;
      } else if (c < 0x800) {
        text += {(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
      } else if (c < 0x10000) {
        text += {(char)(0xE0 | (c >> 12)), (char)(0x80 | ((c >> 6) & 0x3F)), (char)(0x80 | (c & 0x3F))};
      } else {
        text += {(char)(0xF0 | (c >> 18)), (char)(0x80 | ((c >> 12) & 0x3F)), (char)(0x80 | ((c >> 6) & 0x3F)),
                 (char)(0x80 | (c & 0x3F))};
      }
    }
    ASSERT_EQ(tok.decode(tok.encode(text, false, false)), text);
    ASSERT_EQ(tok.decode(tok.encode(text, false, true)), text);
  }
}

TEST(BpeTokenizer, EndOfGenerationFollowsLlamaCpp) {
  BpeVocabulary vocab = tiny_vocabulary({}, {{"</s>", TokenType::Control},
                                             {"<|im_end|>", TokenType::Normal},
                                             {"<|endoftext|>", TokenType::Control},
                                             {"<reponame>", TokenType::Control},
                                             {"<|im_start|>", TokenType::Control}});
  vocab.eos_id = 256;  // "</s>"
  const BpeTokenizer tok(std::move(vocab));
  for (const char* text : {"</s>", "<|im_end|>", "<|endoftext|>", "<reponame>"}) {
    EXPECT_TRUE(tok.is_eog(id_of(tok, text))) << text;
  }
  EXPECT_FALSE(tok.is_eog(id_of(tok, "<|im_start|>")));
  EXPECT_FALSE(tok.is_eog('a'));
  EXPECT_FALSE(tok.is_eog(-1));
  // An end-of-turn-looking token stored as normal becomes a control token.
  EXPECT_EQ(tok.token_type(id_of(tok, "<|im_end|>")), TokenType::Control);
}

TEST(BpeTokenizer, AddSpecialFollowsTheVocabulary) {
  BpeVocabulary vocab = tiny_vocabulary({}, {{"<s>", TokenType::Control}, {"</s>", TokenType::Control}});
  vocab.bos_id = 256;
  vocab.eos_id = 257;
  vocab.add_bos = true;
  const BpeTokenizer with_bos(vocab);
  EXPECT_EQ(with_bos.encode("a", true, false), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(with_bos.encode("a", false, false), (std::vector<int32_t>{'a'}));
  vocab.add_bos = false;
  vocab.add_eos = true;
  EXPECT_EQ(BpeTokenizer(vocab).encode("a", true, false), (std::vector<int32_t>{'a', 257}));
}

TEST(BpeTokenizer, CleansUpSpacesWhereThePreTokenizerSaysSo) {
  const std::string text = "Hello , world ! it 's a ' b";
  const BpeTokenizer gpt2(tiny_vocabulary({}, {}, "gpt-2"));
  EXPECT_EQ(gpt2.decode(gpt2.encode(text, false, false)), "Hello, world! it's a'b");
  const BpeTokenizer smollm(tiny_vocabulary({}, {}, "smollm"));
  EXPECT_EQ(smollm.decode(smollm.encode(text, false, false)), text);
}

TEST(BpeTokenizer, RejectsDuplicateTokens) {
  BpeVocabulary vocab = tiny_vocabulary({});
  vocab.tokens.push_back("a");
  vocab.token_types.push_back(TokenType::Normal);
  EXPECT_THROW(BpeTokenizer{vocab}, Error);
}

TEST(PreTokenizer, UnknownNameIsAnErrorNamingIt) {
  try {
    PreTokenizer pre("bogus-pre");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bogus-pre'"), std::string::npos) << e.what();
  }
}

TEST(PreTokenizer, SmolLMSplitsDigitsAndFollowsGpt2Rules) {
  using W = std::vector<std::string>;
  EXPECT_EQ(split("smollm", "abc 123"), (W{"abc", " ", "1", "2", "3"}));
  EXPECT_EQ(split("smollm", "Hello, world!"), (W{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("smollm", "don't I'M"), (W{"don", "'t", " I", "'", "M"}));  // contractions are lower case only
  EXPECT_EQ(split("smollm", "a  b"), (W{"a", " ", " b"}));
  EXPECT_EQ(split("smollm", "a\n\nb"), (W{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split("smollm", "end  "), (W{"end", "  "}));
  EXPECT_EQ(split("smollm", " \t x"), (W{" \t", " x"}));
  EXPECT_EQ(split("smollm", "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC"), (W{"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"}));
  // U+0085 (NEL) is whitespace to llama.cpp: two of them before a letter split like two spaces would.
  EXPECT_EQ(split("smollm", "a\xC2\x85\xC2\x85" "b"), (W{"a", "\xC2\x85", "\xC2\x85", "b"}));
  EXPECT_EQ(split("smollm", ""), W{});
}

TEST(PreTokenizer, Llama3AndQwen2GroupDigitsDifferently) {
  using W = std::vector<std::string>;
  EXPECT_EQ(split("llama3", "1234567"), (W{"123", "456", "7"}));
  EXPECT_EQ(split("qwen2", "1234"), (W{"1", "2", "3", "4"}));
  EXPECT_EQ(split("llama-bpe", "I'M here"), (W{"I", "'M", " here"}));
  EXPECT_EQ(split("llama3", "a\n\nb"), (W{"a", "\n\n", "b"}));
  EXPECT_EQ(split("llama3", "x...\n\n"), (W{"x", "...\n\n"}));
  EXPECT_TRUE(pre_tokenizer_config("llama3").ignore_merges);
  EXPECT_TRUE(pre_tokenizer_config("llama3").add_bos);
  EXPECT_FALSE(pre_tokenizer_config("qwen2").clean_spaces);
}

TEST(PreTokenizer, Gpt2AndDefaultNames) {
  using W = std::vector<std::string>;
  EXPECT_EQ(split("gpt-2", "abc 123"), (W{"abc", " 123"}));
  EXPECT_EQ(split("gpt2", "abc 123"), (W{"abc", " 123"}));
  EXPECT_EQ(split("starcoder", "x=10"), (W{"x", "=", "1", "0"}));
  EXPECT_EQ(split("default", "a+b 12345"), (W{"a", "+", "b", " ", "123", "45"}));
}

TEST(Utf8Tail, APartialCharacterAtTheEndIsDropped) {
  const std::string euro = "\xE2\x82\xAC";  // U+20AC, three bytes
  EXPECT_EQ(without_partial_utf8_tail("cost 5" + euro), "cost 5" + euro);
  EXPECT_EQ(without_partial_utf8_tail("cost 5" + euro.substr(0, 2)), "cost 5");
  EXPECT_EQ(without_partial_utf8_tail("cost 5" + euro.substr(0, 1)), "cost 5");
  EXPECT_EQ(without_partial_utf8_tail("\xF0\x9F\x98"), "");  // 3 of an emoji's 4 bytes
  EXPECT_EQ(without_partial_utf8_tail("a\xC3\xA9"), "a\xC3\xA9");  // a complete two-byte character
  EXPECT_EQ(without_partial_utf8_tail(""), "");
}

}  // namespace
}  // namespace kvf
