#include "compress/compress_recipes.h"

#include "core/error.h"

namespace kvf {
namespace {

struct Recipe {
  const char* name;
  const char* summary;
  double anchors;  // 0: every row kept
};

// Both quantize to 2 bits with the rotated codec (K uniform, V nf levels, groups of 64: 6.6x in memory) and code
// the shards with zstd level 19 (1.22x more on disk); 16x also keeps 45% of the rows (select anchors): at 0.5 it
// measured 15.3x on disk (docs/compress.md), so 0.45.
constexpr Recipe kRecipes[] = {
    {"8x",
     "--quant int2 --quant-group 64 --rotate --v-levels nf --entropy zstd:19 (8.0x on disk, 6.6x in memory; fusion's "
     "answers unchanged: 78.5% / 60% on Qwen 1.5B, HotpotQA / NQ, 44% on Qwen 0.5B)",
     0},
    {"16x",
     "--anchors 0.45 --quant int2 --quant-group 64 --rotate --v-levels nf --entropy zstd:19 (17.0x on disk on Qwen "
     "1.5B; F1 0.60x of the uncompressed KV's over 30 HotpotQA questions)",
     0.45},
};

}  // namespace

std::vector<std::string> compress_recipe_names() {
  std::vector<std::string> names;
  for (const Recipe& r : kRecipes) names.push_back(r.name);
  return names;
}

std::string compress_recipe_summary(const std::string& name) {
  for (const Recipe& r : kRecipes)
    if (name == r.name) return r.summary;
  return "";
}

std::vector<std::string> compress_recipe_keys() {
  return {"anchors", "quant", "quant_group", "keep_first", "rotate", "v_levels", "entropy"};
}

void apply_compress_recipe(const std::string& name, CompressStageOptions& o, const std::string& where) {
  for (const Recipe& r : kRecipes) {
    if (name != r.name) continue;
    o.anchors = r.anchors;
    o.quant = "int2";
    o.quant_group = 64;
    o.keep_first = 0;
    o.rotate = true;
    o.v_levels = "nf";
    o.entropy = {h5::Compression::Codec::Zstd, 19};
    return;
  }
  std::string names;
  for (const std::string& n : compress_recipe_names()) names += (names.empty() ? "" : ", ") + n;
  fail(where, ": unknown recipe '", name, "' (recipes: ", names, ")");
}

}  // namespace kvf
