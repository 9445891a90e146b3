// chunks.h5 (store/chunk_table.h): a valid chunk table edited by the input (hdf5_edits.h), read back.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "hdf5_edits.h"
#include "store/chunk_table.h"

namespace {

std::string valid_table() {
  kvf::ChunkTable table(0x1f0c6f0e5a2b9d47);
  table.add({0, "doc-1", "Saturn", "Saturn has rings.", 0, {12, 7, 99, 3}});
  table.add({0, "doc-1", "Saturn", "It is far.", 1, {5, 6}});
  table.add({0, "doc-2", "", "Tea.", 0, {42}});
  const std::string path = kvf::fuzz::scratch_path("valid-chunks.h5");
  table.write(path);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string valid = valid_table();
  const std::string path = kvf::fuzz::scratch_path("chunks.h5");
  kvf::fuzz::write_edited_hdf5(valid, data, size, path);
  try {
    kvf::ChunkTable::read(path);
  } catch (const kvf::Error&) {
  }
  return 0;
}
