#include "io/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

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

json read_json(const std::string& path) {
  std::ifstream in(path);
  KVF_CHECK(in, path, ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(path, ": not valid JSON (", e.what(), ")");
  }
}

bool is_type(const json& j, const char* type) { return j.is_object() && j.value("type", "") == type; }

// tokenizer.json's pre_tokenizer as a tokenizer.ggml.pre name.
std::string pre_tokenizer_name(const std::string& path, const json& pre, bool clean_spaces) {
  std::vector<json> steps;
  if (is_type(pre, "Sequence")) {
    for (const json& s : pre.value("pretokenizers", json::array())) steps.push_back(s);
  } else if (!pre.is_null()) {
    steps.push_back(pre);
  }
  const auto byte_level = [](const json& s, bool use_regex) {
    return is_type(s, "ByteLevel") && s.value("use_regex", true) == use_regex && !s.value("add_prefix_space", false);
  };
  if (steps.size() == 1 && byte_level(steps[0], true)) return "gpt2";
  if (steps.size() == 2 && is_type(steps[0], "Digits") && steps[0].value("individual_digits", false) &&
      byte_level(steps[1], true))
    return clean_spaces ? "starcoder" : "smollm";
  if (steps.size() == 2 && is_type(steps[0], "Split") && byte_level(steps[1], false) &&
      steps[0].value("behavior", "") == "Isolated" && !steps[0].value("invert", false)) {
    const std::string regex = steps[0].value("pattern", json::object()).value("Regex", "");
    if (regex == kQwen2Split) return "qwen2";
    if (regex == kLlama3Split) return "llama-bpe";
  }
  fail(path, ": pre_tokenizer ", pre.dump().substr(0, 300),
       " is not supported (byte-level BPE as GPT-2, StarCoder/SmolLM, Qwen2 or Llama 3 split the text)");
}

// A special token as tokenizer_config.json names it: a string, {"content": ...} or null.
std::string special_text(const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  const json& v = cfg[key];
  return v.is_string() ? v.get<std::string>() : v.value("content", "");
}

std::string chat_template(const std::string& dir, const json& cfg) {
  if (cfg.contains("chat_template")) {
    const json& t = cfg["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    for (const json& named : t)  // a list of {name, template}: the default one
      if (named.value("name", "") == "default") return named.value("template", "");
  }
  std::ifstream in(dir + "/chat_template.jinja");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void add_hf_tokenizer_metadata(const std::string& dir, const HfDecoderConfig& config,
                               std::map<std::string, gguf::Value>& kv) {
  const std::string path = dir + "/tokenizer.json", cfg_path = dir + "/tokenizer_config.json";
  const json tok = read_json(path);
  const json cfg = std::filesystem::exists(cfg_path) ? read_json(cfg_path) : json::object();
  const json& model = tok.contains("model") ? tok["model"] : json();
  KVF_CHECK(is_type(model, "BPE"), path, ": model.type ", model.is_object() ? model.value("type", json()).dump() : "",
            " is not supported (byte-level BPE only)");
  KVF_CHECK(is_type(tok.value("decoder", json()), "ByteLevel"), path, ": decoder ",
            tok.value("decoder", json()).dump().substr(0, 200), " is not ByteLevel");
  const json norm = tok.value("normalizer", json());
  KVF_CHECK(norm.is_null() || is_type(norm, "NFC"), path, ": normalizer ", norm.dump(),
            " is not supported (none, NFC)");
  if (is_type(norm, "NFC")) kv[kNormalizerKey] = gguf::string_value("NFC");

  const int64_t n = config.vocab;
  std::vector<std::string> tokens((size_t)n);
  std::vector<int64_t> types((size_t)n, 1);  // TokenType::Normal
  const auto place = [&](const std::string& text, const json& id, int64_t type, const char* where) {
    KVF_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < n, path, ": ", where, " token \"",
              text, "\" has id ", id.dump(), ", outside vocab_size ", n, " (", config.path, ")");
    tokens[id.get<size_t>()] = text;
    types[id.get<size_t>()] = type;
  };
  KVF_CHECK(model.contains("vocab") && model["vocab"].is_object(), path, ": model.vocab is not an object");
  for (const auto& [text, id] : model["vocab"].items()) place(text, id, 1, "model.vocab");
  for (const json& added : tok.value("added_tokens", json::array())) {
    KVF_CHECK(added.contains("content") && added["content"].is_string(), path, ": added_tokens entry ", added.dump(),
              " has no content");
    place(added["content"].get<std::string>(), added.value("id", json()), added.value("special", false) ? 3 : 4,
          "added_tokens");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[(size_t)i].empty()) {
      tokens[(size_t)i] = "[PAD" + std::to_string(i) + "]";
      types[(size_t)i] = 5;  // TokenType::Unused
    }
  }
  std::vector<std::string> merges;
  for (const json& m : model.value("merges", json::array())) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else {
      KVF_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), path, ": merge ", m.dump(),
                " is neither \"a b\" nor [\"a\", \"b\"]");
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
  }
  const bool clean_spaces = cfg.value("clean_up_tokenization_spaces", true);
  kv["tokenizer.ggml.model"] = gguf::string_value("gpt2");
  kv["tokenizer.ggml.pre"] =
      gguf::string_value(pre_tokenizer_name(path, tok.value("pre_tokenizer", json()), clean_spaces));
  kv["tokenizer.ggml.tokens"] = gguf::string_array_value(std::move(tokens));
  kv["tokenizer.ggml.token_type"] = gguf::int_array_value(std::move(types));
  kv["tokenizer.ggml.merges"] = gguf::string_array_value(std::move(merges));

  // Special ids: tokenizer_config.json names them by text, config.json by id.
  const auto& names = kv["tokenizer.ggml.tokens"].strings;
  const auto id_of = [&](const std::string& key, int64_t fallback) -> int64_t {
    const std::string text = special_text(cfg, key.c_str());
    if (text.empty()) return fallback;
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == text) return (int64_t)i;
    fail(cfg_path, ": ", key, " \"", text, "\" is not in the vocabulary of ", path);
  };
  const std::pair<const char*, int64_t> specials[] = {
      {"bos_token", config.bos_id}, {"eos_token", config.eos_id}, {"unk_token", -1}, {"pad_token", -1}};
  const char* const keys[] = {"bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"};
  for (size_t k = 0; k < 4; ++k) {
    const int64_t id = id_of(specials[k].first, specials[k].second);
    KVF_CHECK(id < n, config.path, ": ", specials[k].first, "_id ", id, " is outside vocab_size ", n);
    if (id >= 0) kv[std::string("tokenizer.ggml.") + keys[k]] = gguf::int_value(id);
  }
  for (const char* key : {"add_bos_token", "add_eos_token"}) {
    if (!cfg.contains(key)) continue;
    KVF_CHECK(cfg[key].is_boolean(), cfg_path, ": ", key, " = ", cfg[key].dump(), " is not true or false");
    kv[std::string("tokenizer.ggml.") + key] = gguf::bool_value(cfg[key].get<bool>());
  }
  const std::string tmpl = chat_template(dir, cfg);
  if (!tmpl.empty()) kv["tokenizer.chat_template"] = gguf::string_value(tmpl);
}

}  // namespace kvf
