// A pipeline YAML file (pipeline/pipeline.h), checked as `kvprep run` checks it before its first stage.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "pipeline/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::write_input("pipeline.yaml", data, size);
  try {
    kvf::check_pipeline(path, {});
  } catch (const kvf::Error&) {
  }
  return 0;
}
