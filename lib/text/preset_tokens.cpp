#include "text/preset_tokens.h"

namespace kvf {

std::vector<int32_t> preset_token_list(const gguf::File& file, const std::string& key, const BpeTokenizer& tokenizer) {
  std::vector<int32_t> preset;
  if (file.has(key))
    for (int64_t id : file.get_int_array(key)) preset.push_back((int32_t)id);
  if (preset.empty()) preset = tokenizer.encode("\n", false, false);
  return preset;
}

std::vector<int32_t> preset_token_ids(const gguf::File& file, const std::string& key, const BpeTokenizer& tokenizer,
                                      int count) {
  const std::vector<int32_t> preset = preset_token_list(file, key, tokenizer);
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back(preset[(size_t)i % preset.size()]);
  return ids;
}

}  // namespace kvf
