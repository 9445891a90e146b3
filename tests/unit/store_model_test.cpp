// prep/store_model: a command given no --model uses the store's own, named by its manifest; a new store gets
// smollm2; a store built from a file that is no preset asks for its path.
#include "prep/store_model.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/model_paths.h"
#include "store/manifest.h"
#include "support/temp_dir.h"

namespace kvf {
namespace {

std::string store_with_model(const std::string& model_name) {
  const std::string dir = test::fresh_test_dir().string();
  Manifest m;
  m.model_name = model_name;
  save_manifest(dir, m);
  return dir;
}

TEST(StoreModel, TheStoresPresetIsTheDefault) {
  EXPECT_EQ(model_for_store("", store_with_model("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")), "qwen0.5b");
  EXPECT_EQ(model_for_store("", store_with_model("SmolLM2-135M-Instruct.Q4_1.gguf")), "smollm2");
  EXPECT_EQ(model_for_store("", store_with_model("qwen0.5b-hf")), "qwen0.5b-hf");
}

TEST(StoreModel, AGivenModelWinsAndANewStoreGetsSmollm2) {
  EXPECT_EQ(model_for_store("qwen1.5b", store_with_model("SmolLM2-135M-Instruct.Q4_1.gguf")), "qwen1.5b");
  EXPECT_EQ(model_for_store("", test::fresh_test_dir().string() + "/new-store"), "smollm2");
}

TEST(StoreModel, AFileThatIsNoPresetMustBeNamed) {
  const std::string dir = store_with_model("my-finetune.gguf");
  try {
    model_for_store("", dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("built with the model my-finetune.gguf, which is not a preset: pass its "
                                         "path with --model"),
              std::string::npos)
        << e.what();
  }
}

TEST(StoreModel, PresetsAreFoundByTheirFileNames) {
  for (const char* preset : {"smollm2", "qwen0.5b", "qwen1.5b", "qwen0.5b-hf", "minilm"})
    EXPECT_EQ(preset_of_file(std::filesystem::path(preset_path(preset)).filename().string()), preset);
  EXPECT_EQ(preset_of_file(""), "");
  EXPECT_EQ(preset_of_file("other.gguf"), "");
}

}  // namespace
}  // namespace kvf
