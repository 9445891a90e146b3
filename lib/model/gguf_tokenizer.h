// A GGUF file's tokenizer metadata (or a Hugging Face folder's, io/hf_folder.h) read into text's plain structs:
// the BPE vocabulary, the chat template and the token ids a model preset names for kvfuse's special roles (KVLink
// link tokens, anchor tokens). A model trained for such a role lists the ids in its GGUF metadata; any other model
// gets a neutral separator, the newline token.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "text/bpe_tokenizer.h"
#include "text/bpe_vocabulary.h"
#include "text/chat_template.h"
#include "text/spm_tokenizer.h"
#include "text/tokenizer.h"

namespace kvf {

// Reads tokenizer.ggml.* from a GGUF file. Throws kvf::Error naming the file and the key when the tokenizer is
// not "gpt2", the pre-tokenizer is unknown, the arrays disagree in length or a special id is out of range.
BpeVocabulary bpe_vocabulary_from_gguf(const gguf::File& file);

// Reads a SentencePiece-style vocabulary (tokenizer.ggml.model "llama": tokens, scores, token_type, the special
// ids, add_bos_token / add_eos_token, add_space_prefix). A vocabulary kvfuse wrote from a Hugging Face
// tokenizer.json (io/hf_tokenizer.h) carries tokenizer.ggml.merges, which then decide instead of the scores.
// Throws kvf::Error naming the file and the key for another model, arrays of other lengths, a token given twice
// or a special id outside the vocabulary.
SpmVocabulary spm_vocabulary_from_gguf(const gguf::File& file);

// True when the file's tokenizer is SentencePiece-style (tokenizer.ggml.model "llama").
bool gguf_tokenizer_is_spm(const gguf::File& file);

// The file's tokenizer, of the kind tokenizer.ggml.model names: SpmTokenizer for "llama", else BpeTokenizer
// (which refuses anything but "gpt2", naming the file and the value).
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const gguf::File& file);

// The template of a GGUF file (tokenizer.chat_template; ChatML with a note when absent).
ChatTemplate chat_template_from_gguf(const gguf::File& file);

inline constexpr const char* kLinkTokensKey = "kvfuse.link_token_ids";
inline constexpr const char* kAnchorTokensKey = "kvfuse.anchor_token_ids";

// The ids listed under `key`, or the newline token alone (a SentencePiece vocabulary's "<0x0A>", without the
// "▁" it puts before a text).
std::vector<int32_t> preset_token_list(const gguf::File& file, const std::string& key, const Tokenizer& tokenizer);
// `count` ids: preset_token_list's, repeated in turn.
std::vector<int32_t> preset_token_ids(const gguf::File& file, const std::string& key, const Tokenizer& tokenizer,
                                      int count);

}  // namespace kvf
