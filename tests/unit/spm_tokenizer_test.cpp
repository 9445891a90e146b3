// The SentencePiece-style tokenizer against llama.cpp's own fixture: tests/fixtures/spm/ggml-vocab-llama-spm.gguf
// (Llama 2's vocabulary) with the texts (.inp) and the ids llama.cpp's test-tokenizer-0 gives them (.out), as
// tests/reference/fetch_spm_fixtures.sh fetched them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/gguf.h"
#include "model/gguf_tokenizer.h"
#include "support/model_files.h"
#include "text/spm_tokenizer.h"

namespace kvf {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The .inp texts: each followed by "\n__ggml_vocab_test__\n".
std::vector<std::string> fixture_texts(const std::string& path) {
  const std::string all = read_all(path), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t from = 0, at; (at = all.find(sep, from)) != std::string::npos; from = at + sep.size())
    texts.push_back(all.substr(from, at - from));
  return texts;
}

std::vector<std::vector<int32_t>> fixture_ids(const std::string& path) {
  std::istringstream all(read_all(path));
  std::vector<std::vector<int32_t>> lines;
  for (std::string line; std::getline(all, line);) {
    std::istringstream ids(line);
    lines.emplace_back();
    for (int32_t id; ids >> id;) lines.back().push_back(id);
  }
  return lines;
}

const std::string kGguf = "spm/ggml-vocab-llama-spm.gguf";

const SpmTokenizer& llama_spm() {
  static const SpmTokenizer tokenizer(
      spm_vocabulary_from_gguf(*gguf::File::open(test::fixture_path(kGguf))));
  return tokenizer;
}

TEST(SpmTokenizer, MatchesLlamaCppFixtureTokenForToken) {
  const std::vector<std::string> texts = fixture_texts(test::fixture_path(kGguf + ".inp"));
  const std::vector<std::vector<int32_t>> expected = fixture_ids(test::fixture_path(kGguf + ".out"));
  ASSERT_EQ(texts.size(), expected.size());
  ASSERT_GT(texts.size(), 30u);
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(llama_spm().encode(texts[i], false, true), expected[i]) << "line " << i << ": \"" << texts[i] << "\"";
    tokens += expected[i].size();
  }
  std::printf("llama-spm fixture: %zu texts, %zu tokens compared\n", texts.size(), tokens);
}

TEST(SpmTokenizer, DecodesBackToTheText) {
  for (const std::string& text : fixture_texts(test::fixture_path(kGguf + ".inp"))) {
    EXPECT_EQ(llama_spm().decode(llama_spm().encode(text, false, false)), text);
    EXPECT_EQ(llama_spm().decode(llama_spm().encode(text, true, false), true), text);
  }
}

TEST(SpmTokenizer, AddsBosAndSpacePrefix) {
  const SpmTokenizer& tok = llama_spm();
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  EXPECT_EQ(tok.encode("Hello world", true, false), (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(tok.encode("", true, false), (std::vector<int32_t>{1}));
  EXPECT_TRUE(tok.encode("", false, false).empty());
  EXPECT_EQ(tok.decode({1, 15043, 3186}), "<s> Hello world");
  EXPECT_EQ(tok.decode({1, 15043, 3186}, true), "Hello world");
  // A GGUF without tokenizer.metaspace.prepend_scheme keeps SentencePiece's (llama.cpp's) prefix rule.
  EXPECT_EQ(tok.vocabulary().prefix_rule, SpacePrefixRule::SentencePiece);
  // "</s>" is its id only when specials are parsed; a special token is followed by a space prefix.
  EXPECT_EQ(tok.encode("a</s>b", false, true), (std::vector<int32_t>{263, 2, 289}));  // ▁a </s> ▁b
  const std::vector<int32_t> unparsed = tok.encode("a</s>b", false, false);
  EXPECT_EQ(std::count(unparsed.begin(), unparsed.end(), 2), 0);
}

TEST(SpmTokenizer, FallsBackToBytes) {
  const SpmTokenizer& tok = llama_spm();
  for (const std::string text : {"\xF0\x9F\xA6\x99", "\xE9\xBE\x98\xF0\x9F\x98\x80 x"}) {  // 🦙, 龘😀
    const std::vector<int32_t> ids = tok.encode(text, false, false);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += tok.token_type(id) == TokenType::Byte;
    EXPECT_GE(bytes, 4u) << text;
    EXPECT_EQ(tok.decode(ids), text);
  }
  // 🦙 is four byte tokens <0xF0> <0x9F> <0xA6> <0x99> after the "▁" prefix (llama.cpp's fixture agrees).
  EXPECT_EQ(tok.encode("\xF0\x9F\xA6\x99", false, false), (std::vector<int32_t>{29871, 243, 162, 169, 156}));
}

TEST(SpmTokenizer, MergesByRankWhenGivenMerges) {
  SpmVocabulary v;
  v.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a", "<0x63>"};
  v.token_types = {TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Normal, TokenType::Normal,
                   TokenType::Normal,  TokenType::Normal,  TokenType::Normal,  TokenType::Byte};
  v.merges = {"a b", "\xE2\x96\x81 a"};
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  const SpmTokenizer tok(v);
  EXPECT_EQ(tok.encode("ab", false, false), (std::vector<int32_t>{3, 6}));  // "a b" ranks first
  EXPECT_EQ(tok.encode("ac", true, false), (std::vector<int32_t>{1, 7, 8}));
  EXPECT_EQ(tok.encode("d", false, false), (std::vector<int32_t>{3, 0}));  // no byte token: unknown
  EXPECT_EQ(tok.decode({3, 6, 8}), "abc");
}

TEST(SpmTokenizer, RefusesBadVocabulariesNamingTheFieldOrFile) {
  SpmVocabulary v;
  v.tokens = {"a", "a"};
  v.token_types = {TokenType::Normal, TokenType::Normal};
  v.scores = {0, 0};
  v.add_bos = false;
  try {
    SpmTokenizer{v};
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("appears twice"), std::string::npos) << e.what();
  }
  v.tokens = {"a", "b"};
  v.scores = {0};
  EXPECT_THROW(SpmTokenizer{v}, Error);
  // A byte-level BPE GGUF is not SentencePiece-style: the error names the file and the key.
  gguf::Parts parts;
  parts.path = "bpe.gguf";
  parts.metadata["tokenizer.ggml.model"] = gguf::string_value("gpt2");
  try {
    spm_vocabulary_from_gguf(*gguf::File::assemble(std::move(parts)));
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bpe.gguf"), std::string::npos) << what;
    EXPECT_NE(what.find("tokenizer.ggml.model"), std::string::npos) << what;
  }
}

TEST(SpmTokenizer, RefusesMissingScoresNamingFileAndKey) {
  gguf::Parts parts;
  parts.path = "short.gguf";
  parts.metadata["tokenizer.ggml.model"] = gguf::string_value("llama");
  parts.metadata["tokenizer.ggml.tokens"] = gguf::string_array_value({"a", "b"});
  try {
    spm_vocabulary_from_gguf(*gguf::File::assemble(std::move(parts)));
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("short.gguf: tokenizer.ggml.scores"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kvf
