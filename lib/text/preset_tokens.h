// Token ids a model preset names for kvfuse's special roles (KVLink link tokens, anchor tokens). A model trained
// for the role lists them in its GGUF metadata; any other model gets a neutral separator, the newline token.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "text/bpe_tokenizer.h"

namespace kvf {

inline constexpr const char* kLinkTokensKey = "kvfuse.link_token_ids";
inline constexpr const char* kAnchorTokensKey = "kvfuse.anchor_token_ids";

// The ids listed under `key`, or the newline token alone.
std::vector<int32_t> preset_token_list(const gguf::File& file, const std::string& key, const BpeTokenizer& tokenizer);
// `count` ids: preset_token_list's, repeated in turn.
std::vector<int32_t> preset_token_ids(const gguf::File& file, const std::string& key, const BpeTokenizer& tokenizer,
                                      int count);

}  // namespace kvf
