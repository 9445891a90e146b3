#include "io/hf_spm_tokenizer.h"

#include "core/error.h"
#include "core/json_file.h"

namespace kvf {
namespace {

using nlohmann::json;

const char* const kSpace = "\xE2\x96\x81";  // U+2581

const json& field(const json& obj, const char* key) {
  static const json absent;
  if (!obj.is_object()) return absent;
  const auto it = obj.find(key);
  return it == obj.end() ? absent : *it;
}
bool is_type(const json& j, const char* type) { return field(j, "type") == type; }

// A Replace step of a normalizer or decoder: {"type": "Replace", "pattern": {"String": from}, "content": to}.
bool is_replace(const json& j, const char* from, const char* to) {
  return is_type(j, "Replace") && field(field(j, "pattern"), "String") == from && field(j, "content") == to;
}

// The normalizer form: Prepend("▁") + Replace(" ", "▁") (the prefix), or Replace alone (none); true: a prefix.
bool normalizer_prefix(const std::string& path, const json& norm) {
  const json& steps = field(norm, "normalizers");
  if (is_type(norm, "Sequence") && steps.is_array()) {
    if (steps.size() == 2 && is_type(steps[0], "Prepend") && field(steps[0], "prepend") == kSpace &&
        is_replace(steps[1], " ", kSpace))
      return true;
    if (steps.size() == 1 && is_replace(steps[0], " ", kSpace)) return false;
  }
  if (is_replace(norm, " ", kSpace)) return false;
  fail(path, ": normalizer ", json_shown(norm, 300), " is not supported with byte_fallback (Prepend(\"▁\") + ",
       "Replace(\" \", \"▁\"), or no normalizer and a Metaspace pre_tokenizer)");
}

// The Metaspace pre_tokenizer: replacement "▁", split false, prepend_scheme first, always or never.
std::string metaspace_scheme(const std::string& path, const json& pre) {
  KVF_CHECK(is_type(pre, "Metaspace"), path, ": pre_tokenizer ", json_shown(pre, 300),
            " is not supported with byte_fallback (Metaspace, or none with a Prepend/Replace normalizer)");
  const json& replacement = field(pre, "replacement");
  KVF_CHECK(replacement == kSpace, path, ": pre_tokenizer.replacement ", json_shown(replacement),
            " is not supported (\"▁\")");
  const json& split = field(pre, "split");
  KVF_CHECK(split == false, path, ": pre_tokenizer.split ", split.is_null() ? "absent (true)" : json_shown(split),
            " is not supported (false: the text is one piece, as SentencePiece merges it)");
  const json& scheme = field(pre, "prepend_scheme");
  KVF_CHECK(scheme == "first" || scheme == "always" || scheme == "never", path, ": pre_tokenizer.prepend_scheme ",
            scheme.is_null() ? "absent" : json_shown(scheme), " is not supported (first, always, never)");
  return scheme.get<std::string>();
}

// The decoder: Replace("▁", " ") + ByteFallback + Fuse, then Strip(" ", 1, 0) exactly when a prefix is added.
void check_decoder(const std::string& path, const json& decoder, bool prefix) {
  const json& steps = field(decoder, "decoders");
  bool ok = is_type(decoder, "Sequence") && steps.is_array() && steps.size() == (prefix ? 4u : 3u) &&
            is_replace(steps[0], kSpace, " ") && is_type(steps[1], "ByteFallback") && is_type(steps[2], "Fuse");
  if (ok && prefix)
    ok = is_type(steps[3], "Strip") && field(steps[3], "content") == " " && field(steps[3], "start") == 1 &&
         field(steps[3], "stop") == 0;
  KVF_CHECK(ok, path, ": decoder ", json_shown(decoder, 300), " is not supported with byte_fallback (Replace(\"▁\", ",
            "\" \") + ByteFallback + Fuse", prefix ? " + Strip(\" \", 1, 0)" : ", no Strip without a space prefix", ")");
}

}  // namespace

bool is_hf_spm_tokenizer(const json& tokenizer) { return field(field(tokenizer, "model"), "byte_fallback") == true; }

HfSpmForm read_hf_spm_form(const std::string& path, const json& tok) {
  const json& model = field(tok, "model");
  KVF_CHECK(is_type(model, "BPE"), path, ": model.type ", json_shown(field(model, "type")),
            " is not supported with byte_fallback (BPE)");
  // Fields that would change how a word merges: absent or their neutral value only.
  const std::pair<const char*, json> neutral[] = {{"dropout", nullptr},
                                                  {"continuing_subword_prefix", nullptr},
                                                  {"end_of_word_suffix", nullptr},
                                                  {"ignore_merges", false}};
  for (const auto& [key, value] : neutral) {
    const json& v = field(model, key);
    KVF_CHECK(v.is_null() || v == value, path, ": model.", key, " = ", json_shown(v), " is not supported (",
              json_shown(value), ")");
  }
  HfSpmForm form;
  const json& unk = field(model, "unk_token");
  KVF_CHECK(unk.is_null() || unk.is_string(), path, ": model.unk_token = ", json_shown(unk), " is not a string");
  if (unk.is_string()) form.unk_token = unk.get<std::string>();

  const json& norm = field(tok, "normalizer");
  const json& pre = field(tok, "pre_tokenizer");
  if (pre.is_null()) {
    form.add_space_prefix = normalizer_prefix(path, norm);
  } else {
    form.prepend_scheme = metaspace_scheme(path, pre);
    KVF_CHECK(norm.is_null(), path, ": normalizer ", json_shown(norm, 300),
              " is not supported with a Metaspace pre_tokenizer (none)");
    form.add_space_prefix = form.prepend_scheme != "never";
  }
  check_decoder(path, field(tok, "decoder"), form.add_space_prefix);
  return form;
}

HfAddedTokens read_hf_post_processor(const std::string& path, const json& tok) {
  HfAddedTokens added;
  const json& post = field(tok, "post_processor");
  if (post.is_null()) return added;
  const json& single = field(post, "single");
  const auto special = [&](const json& piece) -> std::string {
    const json& id = field(field(piece, "SpecialToken"), "id");
    const json& tokens = field(field(field(post, "special_tokens"), id.is_string() ? id.get<std::string>().c_str() : ""),
                               "tokens");
    return tokens.is_array() && tokens.size() == 1 && tokens[0].is_string() ? tokens[0].get<std::string>() : "";
  };
  bool ok = is_type(post, "TemplateProcessing") && single.is_array() && !single.empty() && single.size() <= 3;
  size_t a = 0;  // where $A is
  if (ok && single.size() > 1 && !special(single[0]).empty()) added.bos = special(single[a++]);
  ok = ok && a < single.size() && field(field(single[a], "Sequence"), "id") == "A";
  if (ok && a + 1 < single.size()) {
    added.eos = special(single[a + 1]);
    ok = !added.eos.empty() && a + 2 == single.size();
  }
  KVF_CHECK(ok, path, ": post_processor ", json_shown(post, 300),
            " is not supported (null, or TemplateProcessing whose single is [special] $A [special], each special "
            "one token)");
  return added;
}

}  // namespace kvf
