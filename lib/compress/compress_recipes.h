// Named recipes for kvprep compress (--recipe NAME, a pipeline compress entry's `recipe:`): the settings that make a
// mode a stated factor smaller on disk than f16, so that a user need not learn the knobs. What each costs in answer
// quality is measured in docs/compress.md ("Fidelity").
#pragma once
#include <string>
#include <vector>

#include "compress/compress_stage.h"

namespace kvf {

// The recipes' names, in the order --help lists them: "8x", "16x".
std::vector<std::string> compress_recipe_names();
// One line on what recipe `name` sets, for --help.
std::string compress_recipe_summary(const std::string& name);
// The settings a recipe sets, as a pipeline's compress entry names them ("quant_group"); kvprep compress spells each
// as an option ("--quant-group"). A user may not give them beside the recipe.
std::vector<std::string> compress_recipe_keys();
// Sets the quantization, anchors and entropy coding of recipe `name` in `o`; throws kvf::Error naming `where`, the
// name and the recipes there are.
void apply_compress_recipe(const std::string& name, CompressStageOptions& o, const std::string& where);

}  // namespace kvf
