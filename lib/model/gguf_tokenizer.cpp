#include "model/gguf_tokenizer.h"

#include <unordered_map>

#include "core/error.h"
#include "io/hf_spm_tokenizer.h"
#include "io/hf_tokenizer.h"
#include "text/pretokenizer.h"

namespace kvf {
namespace {

// Each token text's id; a text given twice is refused, naming the file and both ids.
std::unordered_map<std::string, int64_t> token_ids(const std::string& path, const std::vector<std::string>& tokens) {
  std::unordered_map<std::string, int64_t> ids;
  ids.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto [at, fresh] = ids.emplace(tokens[i], (int64_t)i);
    KVF_CHECK(fresh, path, ": tokenizer.ggml.tokens: token \"", tokens[i], "\" appears twice (ids ", at->second,
              " and ", i, ")");
  }
  return ids;
}

// A merge "left right" (split at the first space after its first byte) whose parts or result are not tokens
// can never apply: a broken vocabulary, refused as the Hugging Face tokenizers library refuses it.
void check_merges(const std::string& path, const std::vector<std::string>& merges,
                  const std::unordered_map<std::string, int64_t>& ids) {
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    KVF_CHECK(space != std::string::npos && space + 1 < m.size(), path, ": tokenizer.ggml.merges[", i, "] \"", m,
              "\" is not \"left right\"");
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    for (const std::string& part : {left, right, left + right})
      KVF_CHECK(ids.count(part), path, ": tokenizer.ggml.merges[", i, "] \"", m, "\": \"", part,
                "\" is not in tokenizer.ggml.tokens");
  }
}

// The token texts and their types as both vocabularies read them: an empty text gets llama.cpp's stand-in, so
// that it can neither match text nor collide with another token; an unknown type reads as Undefined.
struct TokenList {
  std::vector<std::string> tokens;
  std::vector<TokenType> types;
  std::unordered_map<std::string, int64_t> ids;
};

TokenList read_token_list(const gguf::File& file) {
  const std::string& path = file.path();
  TokenList list;
  list.tokens = file.get_string_array("tokenizer.ggml.tokens");
  const int64_t n = (int64_t)list.tokens.size();
  KVF_CHECK(n > 0, path, ": tokenizer.ggml.tokens is empty");
  KVF_CHECK(n < (1LL << 31), path, ": tokenizer.ggml.tokens has ", n, " tokens, more than int32 ids can name");
  for (int64_t i = 0; i < n; ++i)
    if (list.tokens[i].empty()) list.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";
  list.ids = token_ids(path, list.tokens);
  list.types.assign(n, TokenType::Normal);
  if (file.has("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
    KVF_CHECK((int64_t)types.size() == n, path, ": tokenizer.ggml.token_type has ", types.size(), " entries for ", n,
              " tokens");
    for (int64_t i = 0; i < n; ++i) {
      const bool known = types[i] >= 0 && types[i] <= (int64_t)TokenType::Byte;
      list.types[i] = known ? (TokenType)types[i] : TokenType::Undefined;
    }
  }
  return list;
}

// The special token id under `key`; -1 when the file names none, refused outside the vocabulary of n tokens.
int32_t special_token_id(const gguf::File& file, const std::string& key, int64_t n) {
  if (!file.has(key)) return -1;
  const int64_t id = file.get_int(key);
  KVF_CHECK(id >= 0 && id < n, file.path(), ": ", key, " = ", id, " is outside the vocabulary of ", n, " tokens");
  return (int32_t)id;
}

// add_bos / add_eos need the token they add.
void check_added_tokens(const std::string& path, bool add_bos, int32_t bos_id, bool add_eos, int32_t eos_id) {
  KVF_CHECK(!add_bos || bos_id >= 0, path, ": tokenizer.ggml.add_bos_token is set but there is no bos_token_id");
  KVF_CHECK(!add_eos || eos_id >= 0, path, ": tokenizer.ggml.add_eos_token is set but there is no eos_token_id");
}

}  // namespace


BpeVocabulary bpe_vocabulary_from_gguf(const gguf::File& file) {
  const std::string& path = file.path();
  const std::string model = file.get_string("tokenizer.ggml.model");
  KVF_CHECK(model == "gpt2", path, ": tokenizer.ggml.model is '", model,
            "'; only 'gpt2' (byte-level BPE) is supported");

  TokenList list = read_token_list(file);
  const int64_t n = (int64_t)list.tokens.size();
  BpeVocabulary vocab;
  vocab.tokens = std::move(list.tokens);
  vocab.token_types = std::move(list.types);
  vocab.merges = file.get_string_array("tokenizer.ggml.merges");
  check_merges(path, vocab.merges, list.ids);

  const std::string normalizer = file.get_string(kNormalizerKey, "none");
  KVF_CHECK(normalizer == "none" || normalizer == "NFC", path, ": ", kNormalizerKey, " '", normalizer,
            "' is not supported (none, NFC)");
  vocab.nfc = normalizer == "NFC";

  vocab.pre = file.get_string("tokenizer.ggml.pre", "default");
  const PreTokenizerConfig* pre = nullptr;
  try {
    pre = &pre_tokenizer_config(vocab.pre);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }

  const auto special_id = [&](const std::string& key) { return special_token_id(file, key, n); };
  vocab.bos_id = special_id("tokenizer.ggml.bos_token_id");
  vocab.eos_id = special_id("tokenizer.ggml.eos_token_id");
  vocab.unk_id = special_id("tokenizer.ggml.unknown_token_id");
  vocab.pad_id = special_id("tokenizer.ggml.padding_token_id");
  vocab.eot_id = special_id("tokenizer.ggml.eot_token_id");
  vocab.eom_id = special_id("tokenizer.ggml.eom_token_id");
  vocab.fim_pad_id = special_id("tokenizer.ggml.fim_pad_token_id");
  vocab.fim_rep_id = special_id("tokenizer.ggml.fim_rep_token_id");
  vocab.fim_sep_id = special_id("tokenizer.ggml.fim_sep_token_id");

  vocab.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", pre->add_bos);
  vocab.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", false);
  check_added_tokens(path, vocab.add_bos, vocab.bos_id, vocab.add_eos, vocab.eos_id);
  return vocab;
}

bool gguf_tokenizer_is_spm(const gguf::File& file) {
  return file.get_string("tokenizer.ggml.model", "") == "llama";
}

SpmVocabulary spm_vocabulary_from_gguf(const gguf::File& file) {
  const std::string& path = file.path();
  const std::string model = file.get_string("tokenizer.ggml.model");
  KVF_CHECK(model == "llama", path, ": tokenizer.ggml.model is '", model,
            "', not 'llama' (SentencePiece-style)");
  TokenList list = read_token_list(file);
  const int64_t n = (int64_t)list.tokens.size();
  SpmVocabulary vocab;
  vocab.tokens = std::move(list.tokens);
  vocab.token_types = std::move(list.types);
  if (file.has("tokenizer.ggml.merges")) {
    vocab.merges = file.get_string_array("tokenizer.ggml.merges");
    check_merges(path, vocab.merges, list.ids);
  }
  if (vocab.merges.empty()) {
    KVF_CHECK(file.has("tokenizer.ggml.scores"), path,
              ": tokenizer.ggml.scores is missing (a 'llama' tokenizer merges by score)");
    const std::vector<double> scores = file.get_float_array("tokenizer.ggml.scores");
    KVF_CHECK((int64_t)scores.size() == n, path, ": tokenizer.ggml.scores has ", scores.size(), " entries for ", n,
              " tokens");
    vocab.scores.reserve(scores.size());
    for (size_t i = 0; i < scores.size(); ++i) {
      KVF_CHECK(scores[i] == scores[i], path, ": tokenizer.ggml.scores[", i, "] is NaN");
      vocab.scores.push_back((float)scores[i]);
    }
  }

  const auto special_id = [&](const std::string& key) { return special_token_id(file, key, n); };
  vocab.bos_id = special_id("tokenizer.ggml.bos_token_id");
  vocab.eos_id = special_id("tokenizer.ggml.eos_token_id");
  vocab.unk_id = special_id("tokenizer.ggml.unknown_token_id");
  vocab.pad_id = special_id("tokenizer.ggml.padding_token_id");
  vocab.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix", true);
  if (file.has(kPrependSchemeKey)) {  // a Hugging Face tokenizer.json's Metaspace (io/hf_spm_tokenizer.h)
    const std::string scheme = file.get_string(kPrependSchemeKey);
    if (scheme == "first") {
      vocab.prefix_rule = SpacePrefixRule::MetaspaceFirst;
    } else if (scheme == "always") {
      vocab.prefix_rule = SpacePrefixRule::MetaspaceAlways;
    } else {
      KVF_CHECK(scheme == "never", path, ": ", kPrependSchemeKey, " is '", scheme,
                "', not 'first', 'always' or 'never'");
      KVF_CHECK(!vocab.add_space_prefix, path, ": ", kPrependSchemeKey,
                " is 'never' but tokenizer.ggml.add_space_prefix is true");
    }
  }
  vocab.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", true);
  vocab.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", false);
  check_added_tokens(path, vocab.add_bos, vocab.bos_id, vocab.add_eos, vocab.eos_id);
  return vocab;
}

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const gguf::File& file) {
  if (gguf_tokenizer_is_spm(file)) return std::make_unique<SpmTokenizer>(spm_vocabulary_from_gguf(file));
  return std::make_unique<BpeTokenizer>(bpe_vocabulary_from_gguf(file));
}

ChatTemplate chat_template_from_gguf(const gguf::File& file) {
  const std::string source = file.get_string("tokenizer.chat_template", "");
  if (source.empty()) return ChatTemplate(source);
  // The template's bos_token and eos_token: the texts of the file's BOS and EOS tokens ("" where it names none).
  const std::vector<std::string> tokens =
      file.has("tokenizer.ggml.tokens") ? file.get_string_array("tokenizer.ggml.tokens") : std::vector<std::string>{};
  const auto text = [&](const char* key) -> std::string {
    const int64_t id = file.get_int(key, -1);
    return id >= 0 && id < (int64_t)tokens.size() ? tokens[id] : "";
  };
  return ChatTemplate(source, file.path(), text("tokenizer.ggml.bos_token_id"), text("tokenizer.ggml.eos_token_id"));
}


std::vector<int32_t> preset_token_list(const gguf::File& file, const std::string& key, const Tokenizer& tokenizer) {
  std::vector<int32_t> preset;
  if (file.has(key)) {
    const std::vector<int64_t> ids = file.get_int_array(key);
    for (size_t i = 0; i < ids.size(); ++i) {
      KVF_CHECK(ids[i] >= 0 && ids[i] < tokenizer.vocab_size(), file.path(), ": ", key, "[", i, "] = ", ids[i],
                " is outside the vocabulary of ", tokenizer.vocab_size(), " tokens");
      preset.push_back((int32_t)ids[i]);
    }
  }
  if (preset.empty()) {
    preset = tokenizer.encode("\n", false, false);
    if (preset.size() > 1) preset.erase(preset.begin(), preset.end() - 1);  // "▁" first: a SentencePiece prefix
  }
  return preset;
}

std::vector<int32_t> preset_token_ids(const gguf::File& file, const std::string& key, const Tokenizer& tokenizer,
                                      int count) {
  const std::vector<int32_t> preset = preset_token_list(file, key, tokenizer);
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back(preset[(size_t)i % preset.size()]);
  return ids;
}

}  // namespace kvf
