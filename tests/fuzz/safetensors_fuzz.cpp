// The safetensors reader (io/safetensors.h): header, ranges, and every tensor converted to f32.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::write_input("model.safetensors", data, size);
  try {
    const auto file = kvf::safetensors::File::open(path);
    for (const auto& t : file->tensors()) {
      try {
        file->to_f32(t);
      } catch (const kvf::Error&) {
      }
    }
  } catch (const kvf::Error&) {
  }
  return 0;
}
