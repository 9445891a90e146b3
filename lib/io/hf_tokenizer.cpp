#include "io/hf_tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "core/json_file.h"
#include "core/regular_file.h"
#include "io/hf_spm_tokenizer.h"

namespace kvf {
namespace {

using nlohmann::json;

// The Split regexes of the tokenizer.json files of Qwen2 and Llama 3, and the llama.cpp pre-tokenizer names
// that stand for them.
const char* const kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// "<0x41>": a byte token, as the Hugging Face tokenizers library names them for byte fallback.
bool is_byte_token(const std::string& text) {
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return text.size() == 6 && text.compare(0, 3, "<0x") == 0 && hex(text[3]) && hex(text[4]) && text[5] == '>';
}

constexpr uint64_t kMaxTokenizerBytes = 512u << 20;  // the largest tokenizer.json files are tens of MB

// Lookups that never throw, whatever type a value has: a value of another type is the file's mistake, and the
// callers below name the file, the field and the value for it.
const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
bool equals(const json& obj, const char* key, const json& expected, const json& absent) {
  const json* v = member(obj, key);
  return (v ? *v : absent) == expected;
}
bool is_type(const json& j, const char* type) { return equals(j, "type", type, nullptr); }

// An optional true/false field of file `path`: `where` + key names it in errors. null counts as absent.
bool bool_field(const std::string& path, const json& obj, const std::string& where, const char* key, bool absent) {
  const json* v = member(obj, key);
  if (!v || v->is_null()) return absent;
  KVF_CHECK(v->is_boolean(), path, ": ", where, key, " = ", json_shown(*v), " is not true or false");
  return v->get<bool>();
}

// tokenizer.json's pre_tokenizer as a tokenizer.ggml.pre name.
std::string pre_tokenizer_name(const std::string& path, const json& pre, bool clean_spaces) {
  std::vector<json> steps;
  if (is_type(pre, "Sequence")) {
    const json* list = member(pre, "pretokenizers");
    if (list && list->is_array())
      for (const json& s : *list) steps.push_back(s);
  } else if (!pre.is_null()) {
    steps.push_back(pre);
  }
  const auto byte_level = [](const json& s, bool use_regex) {
    return is_type(s, "ByteLevel") && equals(s, "use_regex", use_regex, true) &&
           equals(s, "add_prefix_space", false, false);
  };
  if (steps.size() == 1 && byte_level(steps[0], true)) return "gpt2";
  if (steps.size() == 2 && is_type(steps[0], "Digits") && equals(steps[0], "individual_digits", true, false) &&
      byte_level(steps[1], true))
    return clean_spaces ? "starcoder" : "smollm";
  if (steps.size() == 2 && is_type(steps[0], "Split") && byte_level(steps[1], false) &&
      equals(steps[0], "behavior", "Isolated", nullptr) && equals(steps[0], "invert", false, false)) {
    const json* pattern = member(steps[0], "pattern");
    const json* regex = pattern ? member(*pattern, "Regex") : nullptr;
    if (regex && *regex == kQwen2Split) return "qwen2";
    if (regex && *regex == kLlama3Split) return "llama-bpe";
  }
  fail(path, ": pre_tokenizer ", json_shown(pre, 300),
       " is not supported (byte-level BPE as GPT-2, StarCoder/SmolLM, Qwen2 or Llama 3 split the text)");
}

// A special token as tokenizer_config.json names it: a string, {"content": "..."} or null ("" when absent).
std::string special_text(const std::string& cfg_path, const json& cfg, const char* key) {
  const json* v = member(cfg, key);
  if (!v || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  const json* content = member(*v, "content");
  KVF_CHECK(content && content->is_string(), cfg_path, ": ", key, " = ", json_shown(*v),
            " is neither a string nor an object with a \"content\" string");
  return content->get<std::string>();
}

// tokenizer_config.json's chat_template (a string, or a list of {"name", "template"} of which "default" is used),
// else the folder's chat_template.jinja, else "".
std::string chat_template(const std::string& dir, const std::string& cfg_path, const json& cfg) {
  if (const json* t = member(cfg, "chat_template"); t && !t->is_null()) {
    if (t->is_string()) return t->get<std::string>();
    KVF_CHECK(t->is_array(), cfg_path, ": chat_template = ", json_shown(*t),
              " is neither a string nor a list of {\"name\", \"template\"}");
    for (size_t i = 0; i < t->size(); ++i) {
      const json& named = (*t)[i];
      const json* name = member(named, "name");
      const json* text = member(named, "template");
      KVF_CHECK(name && name->is_string() && text && text->is_string(), cfg_path, ": chat_template[", i, "] = ",
                json_shown(named), " is not {\"name\": string, \"template\": string}");
      if (*name == "default") return text->get<std::string>();
    }
  }
  const std::string file = dir + "/chat_template.jinja";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec))) return "";
  return read_regular_file(file, kMaxTokenizerBytes);
}

// The token texts by id, as tokenizer.json's model.vocab and added_tokens give them, with the checks the
// Hugging Face tokenizers library makes: every id inside the vocabulary, no id or text given twice.
class TokenTable {
 public:
  TokenTable(const std::string& path, const std::string& config_path, int64_t n)
      : path_(path), config_path_(config_path), tokens_((size_t)n), types_((size_t)n, 1), filled_((size_t)n) {}

  void place(const std::string& text, const json& id, int64_t type, const std::string& where) {
    const int64_t n = (int64_t)tokens_.size();
    KVF_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < n, path_, ": ", where,
              " token \"", text, "\" has id ", json_shown(id), ", outside vocab_size ", n, " (", config_path_, ")");
    const int64_t i = id.get<int64_t>();
    const auto [at, fresh] = ids_.emplace(text, i);
    KVF_CHECK(fresh || at->second == i, path_, ": ", where, " token \"", text, "\" has id ", i,
              ", but it already has id ", at->second);
    KVF_CHECK(!filled(i) || tokens_[(size_t)i] == text, path_, ": ", where, " gives id ", i, " to \"", text,
              "\", but it already belongs to \"", tokens_[(size_t)i], "\"");
    tokens_[(size_t)i] = text;
    types_[(size_t)i] = type;
    filled_[(size_t)i] = true;
  }

  // Ids no file names become unused "[PADn]" tokens (llama.cpp's converter does the same).
  void pad() {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      if (filled_[i]) continue;
      tokens_[i] = "[PAD" + std::to_string(i) + "]";
      types_[i] = 5;  // TokenType::Unused
      KVF_CHECK(ids_.emplace(tokens_[i], (int64_t)i).second, path_, ": token \"", tokens_[i], "\" (id ",
                ids_[tokens_[i]], ") has the name kvfuse gives the unused id ", i);
    }
  }

  bool has(const std::string& text) const { return ids_.count(text) != 0; }
  // The id of `text`, -1 when no token has it.
  int64_t id(const std::string& text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
  }
  std::vector<std::string>& tokens() { return tokens_; }
  std::vector<int64_t>& types() { return types_; }

 private:
  bool filled(int64_t i) const { return filled_[(size_t)i]; }
  const std::string& path_;
  const std::string& config_path_;
  std::vector<std::string> tokens_;
  std::vector<int64_t> types_;
  std::vector<bool> filled_;
  std::unordered_map<std::string, int64_t> ids_;
};

// model.merges as "left right" strings (tokenizer.json has "a b" or ["a", "b"]); each part and their
// concatenation must be tokens, as the Hugging Face tokenizers library requires.
std::vector<std::string> read_merges(const std::string& path, const json& model, const TokenTable& table) {
  std::vector<std::string> merges;
  const json* list = member(model, "merges");
  if (!list || list->is_null()) return merges;
  KVF_CHECK(list->is_array(), path, ": model.merges = ", json_shown(*list), " is not an array");
  merges.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    const json& m = (*list)[i];
    std::string left, right;
    if (m.is_string()) {
      const std::string text = m.get<std::string>();
      const size_t space = text.find(' ', 1);
      KVF_CHECK(space != std::string::npos && space + 1 < text.size() && text.find(' ', space + 1) == std::string::npos,
                path, ": model.merges[", i, "] = ", json_shown(m), " is not \"left right\"");
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else {
      KVF_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), path, ": model.merges[", i,
                "] = ", json_shown(m), " is neither \"a b\" nor [\"a\", \"b\"]");
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
      // GGUF keeps a merge as one "left right" string, split at its first space after the first byte.
      KVF_CHECK(!left.empty() && !right.empty() && left.find(' ', 1) == std::string::npos &&
                    right.find(' ') == std::string::npos,
                path, ": model.merges[", i, "] = ", json_shown(m), " has an empty part or a part with a space");
    }
    for (const std::string& part : {left, right, left + right})
      KVF_CHECK(table.has(part), path, ": model.merges[", i, "] = ", json_shown(m), ": \"", part,
                "\" is not in the vocabulary");
    merges.push_back(left + " " + right);
  }
  return merges;
}

}  // namespace

void add_hf_tokenizer_metadata(const std::string& dir, const HfDecoderConfig& config,
                               std::map<std::string, gguf::Value>& kv) {
  const std::string path = dir + "/tokenizer.json", cfg_path = dir + "/tokenizer_config.json";
  const json tok = read_json_file(path, kMaxTokenizerBytes);
  KVF_CHECK(tok.is_object(), path, ": not a JSON object");
  std::error_code ec;
  const json cfg = std::filesystem::exists(std::filesystem::symlink_status(cfg_path, ec))
                       ? read_json_file(cfg_path, kMaxTokenizerBytes)
                       : json::object();
  KVF_CHECK(cfg.is_object(), cfg_path, ": not a JSON object");
  const json* model_ptr = member(tok, "model");
  const json model = model_ptr ? *model_ptr : json();
  const bool spm = is_hf_spm_tokenizer(tok);
  HfSpmForm form;
  if (spm) {
    form = read_hf_spm_form(path, tok);
  } else {
    KVF_CHECK(is_type(model, "BPE"), path, ": model.type ",
              json_shown(member(model, "type") ? model["type"] : json()),
              " is not supported (BPE: byte-level, or SentencePiece-style with byte_fallback)");
    const json* decoder = member(tok, "decoder");
    KVF_CHECK(decoder && is_type(*decoder, "ByteLevel"), path, ": decoder ",
              json_shown(decoder ? *decoder : json(), 200), " is not ByteLevel");
    const json* norm_ptr = member(tok, "normalizer");
    const json norm = norm_ptr ? *norm_ptr : json();
    KVF_CHECK(norm.is_null() || is_type(norm, "NFC"), path, ": normalizer ", json_shown(norm),
              " is not supported (none, NFC)");
    if (is_type(norm, "NFC")) kv[kNormalizerKey] = gguf::string_value("NFC");
  }

  const int64_t n = config.vocab;
  TokenTable table(path, config.path, n);
  const json* vocab = member(model, "vocab");
  KVF_CHECK(vocab && vocab->is_object(), path, ": model.vocab is not an object");
  KVF_CHECK(!vocab->empty(), path, ": model.vocab is empty");
  for (const auto& [text, id] : vocab->items())
    table.place(text, id, spm && is_byte_token(text) ? 6 : 1, "model.vocab");  // TokenType::Byte, Normal
  if (const json* added = member(tok, "added_tokens"); added && !added->is_null()) {
    KVF_CHECK(added->is_array(), path, ": added_tokens = ", json_shown(*added), " is not an array");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      const json* content = member(a, "content");
      KVF_CHECK(content && content->is_string(), path, ": added_tokens[", i, "] = ", json_shown(a),
                " has no \"content\" string");
      const json* id = member(a, "id");
      const std::string where = "added_tokens[" + std::to_string(i) + "].";
      const bool special = bool_field(path, a, where, "special", false);
      // SpmTokenizer cuts added tokens out of the raw text, as tokenizers does for normalized: false.
      if (spm)
        for (const char* key : {"normalized", "lstrip", "rstrip", "single_word"})
          KVF_CHECK(!bool_field(path, a, where, key, key == std::string("normalized") && !special), path, ": ",
                    where, key, " = true (\"", content->get<std::string>(),
                    "\") is not supported with byte_fallback (false)");
      table.place(content->get<std::string>(), id ? *id : json(), special ? 3 : 4,
                  "added_tokens[" + std::to_string(i) + "]");
    }
  }
  table.pad();
  std::vector<std::string> merges = read_merges(path, model, table);
  HfAddedTokens added;  // the tokens post_processor adds (SentencePiece-style form only)
  if (spm) {
    KVF_CHECK(!merges.empty(), path, ": model.merges is empty (a byte_fallback BPE merges by rank)");
    if (!form.unk_token.empty()) {
      const int64_t unk = table.id(form.unk_token);
      KVF_CHECK(unk >= 0, path, ": model.unk_token \"", form.unk_token, "\" is not in the vocabulary");
      table.types()[(size_t)unk] = 2;  // TokenType::Unknown
    }
    added = read_hf_post_processor(path, tok);
    kv["tokenizer.ggml.model"] = gguf::string_value("llama");
    kv["tokenizer.ggml.add_space_prefix"] = gguf::bool_value(form.add_space_prefix);
    if (!form.prepend_scheme.empty()) kv[kPrependSchemeKey] = gguf::string_value(form.prepend_scheme);
  } else {
    const bool clean_spaces = bool_field(cfg_path, cfg, "", "clean_up_tokenization_spaces", true);
    kv["tokenizer.ggml.model"] = gguf::string_value("gpt2");
    const json* pre = member(tok, "pre_tokenizer");
    kv["tokenizer.ggml.pre"] = gguf::string_value(pre_tokenizer_name(path, pre ? *pre : json(), clean_spaces));
  }

  // Special ids: tokenizer_config.json names them by text, else post_processor or tokenizer.json's model, else
  // config.json by id.
  const auto id_in_tokenizer = [&](const std::string& text, const char* where) -> int64_t {
    if (text.empty()) return -1;
    const int64_t id = table.id(text);
    KVF_CHECK(id >= 0, path, ": ", where, " \"", text, "\" is not in the vocabulary");
    return id;
  };
  const int64_t added_bos = id_in_tokenizer(added.bos, "post_processor token");
  const int64_t added_eos = id_in_tokenizer(added.eos, "post_processor token");
  const auto id_of = [&](const char* key, int64_t fallback) -> int64_t {
    const std::string text = special_text(cfg_path, cfg, key);
    if (text.empty()) return fallback;
    const int64_t id = table.id(text);
    KVF_CHECK(id >= 0, cfg_path, ": ", key, " \"", text, "\" is not in the vocabulary of ", path);
    return id;
  };
  const std::pair<const char*, int64_t> specials[] = {{"bos_token", added_bos >= 0 ? added_bos : config.bos_id},
                                                      {"eos_token", added_eos >= 0 ? added_eos : config.eos_id},
                                                      {"unk_token", form.unk_token.empty() ? -1 : table.id(form.unk_token)},
                                                      {"pad_token", -1}};
  const char* const keys[] = {"bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"};
  int64_t ids[4];
  for (size_t k = 0; k < 4; ++k) {
    ids[k] = id_of(specials[k].first, specials[k].second);
    KVF_CHECK(ids[k] < n, config.path, ": ", specials[k].first, "_id ", ids[k], " is outside vocab_size ", n);
    if (ids[k] >= 0) kv[std::string("tokenizer.ggml.") + keys[k]] = gguf::int_value(ids[k]);
  }
  // A SentencePiece-style vocabulary adds BOS / EOS as post_processor does unless tokenizer_config.json says
  // otherwise (transformers rebuilds the post-processor from add_bos_token / add_eos_token).
  const bool adds[2] = {added_bos >= 0, added_eos >= 0};
  const int64_t added_ids[2] = {added_bos, added_eos};
  const char* const add_keys[2] = {"add_bos_token", "add_eos_token"};
  for (size_t k = 0; k < 2; ++k) {
    const json* v = member(cfg, add_keys[k]);
    const bool given = v && !v->is_null();
    if (!given && !spm) continue;
    kv[std::string("tokenizer.ggml.") + add_keys[k]] =
        gguf::bool_value(given ? bool_field(cfg_path, cfg, "", add_keys[k], false) : adds[k]);
    KVF_CHECK(added_ids[k] < 0 || added_ids[k] == ids[k], path, ": post_processor adds \"",
              k == 0 ? added.bos : added.eos, "\" (id ", added_ids[k], "), but ", specials[k].first, " is id ",
              ids[k], " (", cfg_path, ")");
  }
  const std::string tmpl = chat_template(dir, cfg_path, cfg);
  if (!tmpl.empty()) kv["tokenizer.chat_template"] = gguf::string_value(tmpl);
  kv["tokenizer.ggml.tokens"] = gguf::string_array_value(std::move(table.tokens()));
  kv["tokenizer.ggml.token_type"] = gguf::int_array_value(std::move(table.types()));
  kv["tokenizer.ggml.merges"] = gguf::string_array_value(std::move(merges));
}

}  // namespace kvf
