// The SentencePiece-style form of a Hugging Face tokenizer.json (Llama 2, Mistral 7B: a BPE model with
// byte_fallback and <0xNN> byte tokens, "▁" for a space), checked field by field. io/hf_tokenizer.h writes it as
// GGUF tokenizer.ggml.model = "llama" with the merges, which text/spm_tokenizer.h then merges by rank.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace kvf {

// tokenizer.json's Metaspace prepend_scheme ("first", "always" or "never"; "" for the older form, a
// Prepend("▁") + Replace(" ", "▁") normalizer). Hugging Face's Metaspace puts no "▁" before a text that already
// starts with one, and with "first" none after a special token, where SentencePiece puts one; spm_vocabulary_from_gguf
// reads it as SpmVocabulary::prefix_rule (text/spm_tokenizer.h).
inline constexpr const char* kPrependSchemeKey = "tokenizer.metaspace.prepend_scheme";

struct HfSpmForm {
  bool add_space_prefix = false;  // "▁" before the text
  std::string prepend_scheme;     // Metaspace's, "" for the normalizer form
  std::string unk_token;          // model.unk_token, "" when none
};

// True when tokenizer.json's model asks for byte fallback (the SentencePiece-style form).
bool is_hf_spm_tokenizer(const nlohmann::json& tokenizer);

// Checks the model, normalizer, pre_tokenizer and decoder of the SentencePiece-style form; throws kvf::Error
// naming `path`, the field and the value for anything else.
HfSpmForm read_hf_spm_form(const std::string& path, const nlohmann::json& tokenizer);

// The tokens post_processor adds around a text: a TemplateProcessing "single" of [special] $A [special], or none
// (null). Texts "" when not added.
struct HfAddedTokens {
  std::string bos, eos;
};
HfAddedTokens read_hf_post_processor(const std::string& path, const nlohmann::json& tokenizer);

}  // namespace kvf
