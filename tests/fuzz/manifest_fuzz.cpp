// A store's manifest.json (store/manifest.h): every field's presence, type and value, and the paths it lists.
#include <cstdint>
#include <filesystem>

#include "core/error.h"
#include "fuzz_input.h"
#include "store/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::write_input("manifest.json", data, size);
  try {
    kvf::load_manifest(std::filesystem::path(path).parent_path().string());
  } catch (const kvf::Error&) {
  }
  return 0;
}
