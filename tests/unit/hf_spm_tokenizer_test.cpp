// A SentencePiece-style Hugging Face tokenizer.json (Llama 2's vocabulary as a BPE with byte_fallback) read by
// add_hf_tokenizer_metadata and built by spm_vocabulary_from_gguf gives the ids the Hugging Face tokenizers
// library gives: tests/fixtures/hf_spm/ (tests/reference/make_hf_spm_fixtures.py) holds the tokenizer.json in its
// older form (Prepend/Replace normalizer) and the library's ids for both forms; the test makes the newer form
// (Metaspace pre-tokenizer) by swapping the two fields as the script does.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/json_file.h"
#include "io/gguf.h"
#include "io/hf_config.h"
#include "io/hf_spm_tokenizer.h"
#include "io/hf_tokenizer.h"
#include "model/gguf_tokenizer.h"
#include "support/model_files.h"
#include "support/temp_dir.h"
#include "support/test_values.h"
#include "text/spm_tokenizer.h"

namespace kvf {
namespace {

using nlohmann::json;

const json& expected() {
  static const json e = read_json_file(test::fixture_path("hf_spm/expected.json"));
  return e;
}
const json& legacy_form() {
  static const json doc = read_json_file(test::fixture_path("hf_spm/tokenizer.json"));
  return doc;
}
json metaspace_form(const std::string& scheme = "first") {
  json doc = legacy_form();
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", scheme},
                          {"split", false}};
  return doc;
}

// A folder holding `doc` as tokenizer.json (and `cfg` as tokenizer_config.json unless null), read into GGUF
// metadata as a Hugging Face folder is.
std::shared_ptr<const gguf::File> metadata_of(const json& doc, const json& cfg = nullptr) {
  const std::string dir = (test::fresh_test_dir() / "model").string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << doc.dump();
  if (!cfg.is_null()) std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  HfDecoderConfig config;
  config.path = dir + "/config.json";
  config.vocab = 32000;
  gguf::Parts parts;
  parts.path = dir;
  add_hf_tokenizer_metadata(dir, config, parts.metadata);
  return gguf::File::assemble(std::move(parts));
}
// Llama 2's tokenizer_config.json, as far as the tokenizer goes.
const json kLlama2Config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"},
                            {"add_bos_token", true}, {"add_eos_token", false}};

SpmTokenizer tokenizer_of(const json& doc, const json& cfg = nullptr) {
  return SpmTokenizer(spm_vocabulary_from_gguf(*metadata_of(doc, cfg)));
}

std::vector<int32_t> ids(const json& list) { return list.get<std::vector<int32_t>>(); }

// Compares every fixture text with the Hugging Face tokenizers library's ids for `form`, except the texts in
// `differ` (indices), which must differ; returns the tokens compared.
size_t compare(const SpmTokenizer& tok, const std::string& form, const std::set<size_t>& differ) {
  const json& texts = expected()["texts"];
  const json& rows = expected()["forms"][form];
  EXPECT_EQ(texts.size(), rows.size());
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const std::vector<int32_t> plain = tok.encode(text, false, true), special = tok.encode(text, true, true);
    if (differ.count(i)) {
      EXPECT_NE(plain, ids(rows[i]["ids"])) << form << " text " << i << " \"" << text << "\"";
      continue;
    }
    EXPECT_EQ(plain, ids(rows[i]["ids"])) << form << " text " << i << " \"" << text << "\"";
    EXPECT_EQ(special, ids(rows[i]["ids_special"])) << form << " text " << i << " \"" << text << "\"";
    tokens += plain.size();
  }
  std::printf("%s form: %zu texts, %zu tokens as Hugging Face tokenizers gives them\n", form.c_str(),
              texts.size() - differ.size(), tokens);
  return tokens;
}

TEST(HfSpmTokenizer, FixtureIsTheOneTheScriptWrote) {
  EXPECT_EQ(expected()["source"]["sha256"], "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69");
  EXPECT_EQ(expected()["texts"].size(), 59u);
  EXPECT_EQ(legacy_form()["model"]["vocab"].size(), 32000u);
}

TEST(HfSpmTokenizer, MetadataIsLlamaCppsForTheSameVocabulary) {
  const auto hf = metadata_of(legacy_form(), kLlama2Config);
  const auto gguf = gguf::File::open(test::fixture_path("spm/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(hf->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(hf->get_string_array("tokenizer.ggml.tokens"), gguf->get_string_array("tokenizer.ggml.tokens"));
  // <unk> unknown, <s> and </s> control, <0xNN> byte, the rest normal: the types llama.cpp's file gives.
  EXPECT_EQ(hf->get_int_array("tokenizer.ggml.token_type"), gguf->get_int_array("tokenizer.ggml.token_type"));
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id"})
    EXPECT_EQ(hf->get_int(key), gguf->get_int(key)) << key;
  EXPECT_TRUE(hf->get_bool("tokenizer.ggml.add_space_prefix"));
  EXPECT_TRUE(hf->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(hf->get_bool("tokenizer.ggml.add_eos_token"));
  // Without tokenizer_config.json: the post_processor's <s> $A; no EOS is named anywhere.
  const auto bare = metadata_of(legacy_form());
  EXPECT_EQ(bare->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_TRUE(bare->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(bare->get_bool("tokenizer.ggml.add_eos_token"));
  EXPECT_FALSE(bare->has("tokenizer.ggml.eos_token_id"));
  EXPECT_FALSE(hf->has(kPrependSchemeKey));
  EXPECT_EQ(hf->get_string_array("tokenizer.ggml.merges").size(), legacy_form()["model"]["merges"].size());
  EXPECT_EQ(metadata_of(metaspace_form())->get_string(kPrependSchemeKey), "first");
}

// The older form (Prepend("▁") + Replace(" ", "▁")) is SentencePiece's own rule: every text as the library.
TEST(HfSpmTokenizer, LegacyFormMatchesHfTokenizersTokenForToken) {
  EXPECT_GT(compare(tokenizer_of(legacy_form()), "legacy", {}), 600u);
  EXPECT_GT(compare(tokenizer_of(legacy_form(), kLlama2Config), "legacy", {}), 600u);
}

// Hugging Face's Metaspace puts no "▁" before a text that already starts with a space, and with
// prepend_scheme "first" none after a special token, where SentencePiece and llama.cpp put one: the metadata's
// prepend_scheme gives SpmTokenizer that rule, and every text matches the library.
TEST(HfSpmTokenizer, MetaspaceFormMatchesHfTokenizersOnEveryText) {
  const SpmTokenizer tok = tokenizer_of(metaspace_form());
  EXPECT_EQ(tok.vocabulary().prefix_rule, SpacePrefixRule::MetaspaceFirst);
  EXPECT_EQ(tokenizer_of(legacy_form()).vocabulary().prefix_rule, SpacePrefixRule::SentencePiece);
  EXPECT_EQ(compare(tok, "metaspace", {}), 600u);
  EXPECT_EQ(compare(tokenizer_of(metaspace_form(), kLlama2Config), "metaspace", {}), 600u);
}

// prepend_scheme "always": a "▁" before every piece between special tokens that does not start with one. The ids
// are the library's (tokenizers 0.23.3) for the same texts, beside "first"'s.
TEST(HfSpmTokenizer, PrependSchemeAlwaysPrefixesEveryPiece) {
  const SpmTokenizer always = tokenizer_of(metaspace_form("always")), first = tokenizer_of(metaspace_form());
  EXPECT_EQ(always.vocabulary().prefix_rule, SpacePrefixRule::MetaspaceAlways);
  struct Case {
    std::string text;
    std::vector<int32_t> always, first;
  };
  const std::vector<Case> cases = {
      {"Hello world", {15043, 3186}, {15043, 3186}},
      {" Hello", {15043}, {15043}},
      {"\xE2\x96\x81Hello", {15043}, {15043}},
      {"  two", {29871, 1023}, {29871, 1023}},
      {"a </s> b", {263, 29871, 2, 289}, {263, 29871, 2, 289}},
      {"</s>x", {2, 921}, {2, 29916}},
      {"</s> x", {2, 921}, {2, 921}},
      {"x</s>y</s> z", {921, 2, 343, 2, 503}, {921, 2, 29891, 2, 503}},
      {"<s>a<unk>b", {1, 263, 0, 289}, {1, 29874, 0, 29890}},
      {"x</s>", {921, 2}, {921, 2}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(always.encode(c.text, false, true), c.always) << "\"" << c.text << "\"";
    EXPECT_EQ(first.encode(c.text, false, true), c.first) << "\"" << c.text << "\"";
  }
}

// The GGUF key is read as written: another value is refused, naming the file, the key and the value; "never"
// goes with no space prefix only.
TEST(HfSpmTokenizer, RefusesAnUnknownPrependScheme) {
  const auto with = [](const std::string& scheme, bool prefix) {
    const auto file = metadata_of(metaspace_form());
    gguf::Parts parts;
    parts.path = file->path();
    parts.metadata = file->metadata();
    parts.metadata[kPrependSchemeKey] = gguf::string_value(scheme);
    parts.metadata["tokenizer.ggml.add_space_prefix"] = gguf::bool_value(prefix);
    return gguf::File::assemble(std::move(parts));
  };
  const std::string error = test::error_of([&] { spm_vocabulary_from_gguf(*with("sometimes", true)); });
  EXPECT_NE(error.find("model: tokenizer.metaspace.prepend_scheme is 'sometimes', not 'first', 'always' or 'never'"),
            std::string::npos)
      << error;
  EXPECT_NE(test::error_of([&] { spm_vocabulary_from_gguf(*with("never", true)); })
                .find("tokenizer.metaspace.prepend_scheme is 'never' but tokenizer.ggml.add_space_prefix is true"),
            std::string::npos);
  EXPECT_EQ(spm_vocabulary_from_gguf(*with("always", true)).prefix_rule, SpacePrefixRule::MetaspaceAlways);
}

// The tokenizer.json and llama.cpp's GGUF of the same vocabulary (merges by rank, merges by score) give the
// same ids on llama.cpp's 46 texts, as the library and llama.cpp do (the fixture's .out).
TEST(HfSpmTokenizer, SameIdsAsTheGgufVocabularyOnLlamaCppTexts) {
  const SpmTokenizer hf = tokenizer_of(legacy_form());
  const SpmTokenizer gguf(spm_vocabulary_from_gguf(*gguf::File::open(test::fixture_path("spm/ggml-vocab-llama-spm.gguf"))));
  size_t tokens = 0;
  for (size_t i = 0; i < 46; ++i) {
    const std::string text = expected()["texts"][i].get<std::string>();
    const std::vector<int32_t> a = hf.encode(text, false, true);
    EXPECT_EQ(a, gguf.encode(text, false, true)) << "text " << i << " \"" << text << "\"";
    EXPECT_EQ(a, ids(expected()["forms"]["legacy"][i]["ids"])) << "text " << i;
    tokens += a.size();
  }
  EXPECT_EQ(tokens, 519u);  // the .out's count
}

// decode(encode(text)) gives the text back, as the library's decode does, for every text but those whose
// bytes cannot come back: "▁" written in the text decodes as a space, and special tokens are dropped.
TEST(HfSpmTokenizer, DecodesAsHfTokenizers) {
  const SpmTokenizer tok = tokenizer_of(legacy_form());
  const json& texts = expected()["texts"];
  const json& rows = expected()["forms"]["legacy"];
  size_t round_trips = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const std::string hf = rows[i]["decoded"].get<std::string>();
    if (i >= 54 && i <= 56) continue;  // special tokens in the text: see below
    EXPECT_EQ(tok.decode(ids(rows[i]["ids_special"]), true), hf) << "text " << i;
    if (hf == text) ++round_trips;
  }
  EXPECT_EQ(round_trips, texts.size() - 4);  // all but 54-56 and "a▁b ..." (57)
  // Special tokens written in the text: the library drops every special token when skipping them and then strips
  // one leading space. SpmTokenizer's decode skips as llama.cpp's llama_detokenize does (remove_special drops a
  // leading BOS and a trailing EOS, other control tokens render as nothing), for every vocabulary: it keeps <unk>
  // ("▅"; 56) and spends its strip on a skipped special token at the start (the "</s>" of 55, the "<s>" written
  // after BOS in 56); only 54 (a special token in the middle) decodes the same.
  EXPECT_EQ(tok.decode(ids(rows[54]["ids_special"]), true), rows[54]["decoded"].get<std::string>());
  EXPECT_EQ(tok.decode(ids(rows[55]["ids_special"]), true), " starts with eos");
  EXPECT_EQ(tok.decode(ids(rows[56]["ids_special"]), true), " bos written in text\xE2\x96\x85");
}

TEST(HfSpmTokenizer, TokenizerConfigDecidesBosAndEos) {
  const SpmTokenizer tok = tokenizer_of(legacy_form(), {{"add_bos_token", false}, {"add_eos_token", true},
                                                        {"bos_token", "<s>"}, {"eos_token", "</s>"}});
  EXPECT_EQ(tok.encode("Hello world", true, false), (std::vector<int32_t>{15043, 3186, 2}));
  json no_post = legacy_form();
  no_post["post_processor"] = nullptr;
  EXPECT_EQ(tokenizer_of(no_post).encode("Hello world", true, false), (std::vector<int32_t>{15043, 3186}));
}

TEST(HfSpmTokenizer, PrependSchemeNeverAddsNoPrefix) {
  json doc = metaspace_form("never");
  doc["decoder"]["decoders"].erase(3);  // no Strip without a prefix
  const SpmTokenizer tok = tokenizer_of(doc);
  EXPECT_FALSE(tok.vocabulary().add_space_prefix);
  EXPECT_EQ(tok.decode(tok.encode("Hello world", false, false)), "Hello world");
  EXPECT_NE(tok.encode("Hello world", false, false)[0], 15043);  // "Hello", not "▁Hello"
}

// Every field the SentencePiece-style form does not understand is refused, naming the file, the field and
// the value.
TEST(HfSpmTokenizer, RefusesWhatItCannotRepresent) {
  struct Case {
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](json& d) { d["pre_tokenizer"]["split"] = true; }, "pre_tokenizer.split true is not supported"},
      {[](json& d) { d["pre_tokenizer"].erase("split"); }, "pre_tokenizer.split absent (true) is not supported"},
      {[](json& d) { d["pre_tokenizer"]["prepend_scheme"] = "sometimes"; },
       "pre_tokenizer.prepend_scheme \"sometimes\" is not supported"},
      {[](json& d) { d["pre_tokenizer"]["replacement"] = "_"; }, "pre_tokenizer.replacement \"_\" is not supported"},
      {[](json& d) { d["pre_tokenizer"] = {{"type", "Whitespace"}}; },
       "pre_tokenizer {\"type\":\"Whitespace\"} is not supported with byte_fallback"},
      {[](json& d) { d["normalizer"] = {{"type", "NFKC"}}; },
       "normalizer {\"type\":\"NFKC\"} is not supported with a Metaspace pre_tokenizer"},
      {[](json& d) { d["model"]["type"] = "Unigram"; }, "model.type \"Unigram\" is not supported with byte_fallback"},
      {[](json& d) { d["model"]["dropout"] = 0.1; }, "model.dropout = 0.1 is not supported"},
      {[](json& d) { d["model"]["ignore_merges"] = true; }, "model.ignore_merges = true is not supported"},
      {[](json& d) { d["model"]["merges"] = json::array(); }, "model.merges is empty"},
      {[](json& d) { d["model"]["unk_token"] = "<nope>"; }, "model.unk_token \"<nope>\" is not in the vocabulary"},
      {[](json& d) { d["decoder"] = {{"type", "Metaspace"}}; }, "decoder {\"type\":\"Metaspace\"} is not supported"},
      {[](json& d) { d["decoder"]["decoders"].erase(3); }, "decoder {\"decoders\":[{"},
      {[](json& d) { d["added_tokens"][2]["normalized"] = true; },
       "added_tokens[2].normalized = true (\"</s>\") is not supported"},
      {[](json& d) { d["added_tokens"][1]["lstrip"] = true; }, "added_tokens[1].lstrip = true (\"<s>\")"},
      {[](json& d) { d["post_processor"] = {{"type", "ByteLevel"}}; },
       "post_processor {\"type\":\"ByteLevel\"} is not supported"},
  };
  for (const Case& c : cases) {
    json doc = metaspace_form();
    c.edit(doc);
    const std::string error = test::error_of([&] { metadata_of(doc); });
    EXPECT_NE(error.find("tokenizer.json: " + c.message), std::string::npos) << error;
  }
  // The older form's normalizer: only Prepend("▁") + Replace(" ", "▁") or Replace alone.
  json doc = legacy_form();
  doc["normalizer"]["normalizers"][0]["prepend"] = "_";
  EXPECT_NE(test::error_of([&] { metadata_of(doc); })
                .find("tokenizer.json: normalizer {\"normalizers\":[{\"prepend\":\"_\""),
            std::string::npos);
  doc = legacy_form();
  doc["normalizer"] = nullptr;
  EXPECT_NE(test::error_of([&] { metadata_of(doc); }).find("tokenizer.json: normalizer null is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace kvf
