#include "text/end_of_generation.h"

namespace kvf {
namespace {

// Token texts llama.cpp (as bundled with llama-cpp-python 0.3.16) treats as end of generation, whatever their
// stored type; it retypes them as control tokens.
const std::vector<std::string> kEndOfGenerationTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>",
    "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
};
// Fill-in-the-middle pad, repository and file-separator tokens, looked up by text when the file gives no id.
const std::vector<std::string> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"};
const std::vector<std::string> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const std::vector<std::string> kFimSepTexts = {"<|file_sep|>"};

}  // namespace

std::vector<bool> mark_end_of_generation(const std::unordered_map<std::string, int32_t>& ids_by_text,
                                         std::vector<TokenType>& types, EndOfGenerationIds& known) {
  const auto find_text = [&](const std::vector<std::string>& texts) -> int32_t {
    int32_t found = -1;
    for (const std::string& text : texts) {
      const auto it = ids_by_text.find(text);
      if (it != ids_by_text.end() && (found < 0 || it->second < found)) found = it->second;
    }
    return found;
  };
  const auto make_control = [&](int32_t id) {
    if (id >= 0) types[(size_t)id] = TokenType::Control;
  };
  const std::pair<int32_t*, const std::vector<std::string>*> fims[] = {
      {&known.fim_pad, &kFimPadTexts}, {&known.fim_rep, &kFimRepTexts}, {&known.fim_sep, &kFimSepTexts}};
  for (const auto& [id, texts] : fims) {
    if (*id >= 0) continue;
    *id = find_text(*texts);
    make_control(*id);
  }

  std::vector<bool> eog(types.size(), false);
  for (const std::string& text : kEndOfGenerationTexts) {
    const auto it = ids_by_text.find(text);
    if (it == ids_by_text.end()) continue;
    eog[(size_t)it->second] = true;
    make_control(it->second);
  }
  for (int32_t id : {known.eos, known.eot, known.eom, known.fim_pad, known.fim_rep, known.fim_sep}) {
    if (id >= 0) eog[(size_t)id] = true;
  }
  return eog;
}

}  // namespace kvf
