#include "prep/store_model.h"

#include "core/error.h"
#include "io/model_paths.h"
#include "store/manifest.h"

namespace kvf {

std::string model_for_store(const std::string& model, const std::string& store_dir) {
  if (!model.empty()) return model;
  if (store_dir.empty() || !has_manifest(store_dir)) return "smollm2";
  const Manifest manifest = load_manifest(store_dir);
  const std::string preset = preset_of_file(manifest.model_name);
  KVF_CHECK(!preset.empty(), "store ", store_dir, " was built with the model ", manifest.model_name,
            ", which is not a preset: pass its path with --model");
  return preset;
}

}  // namespace kvf
