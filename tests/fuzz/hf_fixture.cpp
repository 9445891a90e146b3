#include "hf_fixture.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fuzz_input.h"
#include "io/random_model.h"
#include "support/hf_folder_writer.h"

namespace kvf::fuzz {

std::string tiny_hf_folder() {
  static const std::string dir = [] {
    const RandomModelSpec spec;  // the unit tests' tiny model: make_seeds.py's index seed names its tensors
    const std::string gguf = scratch_path("tiny.gguf"), folder = scratch_path("hf");
    write_random_model(spec, gguf);
    test::write_hf_folder(gguf, folder, {2});
    return folder;
  }();
  return dir;
}

std::string hf_folder_with(const std::string& file, const uint8_t* data, size_t size) {
  const std::string dir = tiny_hf_folder();
  std::ofstream out(dir + "/" + file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) std::abort();  // the scratch folder itself failing is no finding about the reader
  return dir;
}

}  // namespace kvf::fuzz
