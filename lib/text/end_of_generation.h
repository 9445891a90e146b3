// The ids that end generation, found as llama.cpp's vocabulary loader finds them for every tokenizer kind: the
// ids the file names, tokens whose text marks an end of turn ("<|im_end|>", "<|eot_id|>", ...) and
// fill-in-the-middle separators looked up by text where the file names none. Such tokens become Control.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/bpe_vocabulary.h"

namespace kvf {

struct EndOfGenerationIds {  // -1 where unknown; the fim ids are filled in by text
  int32_t eos = -1;
  int32_t eot = -1;
  int32_t eom = -1;
  int32_t fim_pad = -1;
  int32_t fim_rep = -1;
  int32_t fim_sep = -1;
};

// Returns id -> ends generation; retypes the tokens it finds by text in `types` and fills in `known`'s fim ids.
std::vector<bool> mark_end_of_generation(const std::unordered_map<std::string, int32_t>& ids_by_text,
                                         std::vector<TokenType>& types, EndOfGenerationIds& known);

}  // namespace kvf
