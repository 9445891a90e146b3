// neighbors.h5 (store/neighbor_table.h): a valid table edited by the input (hdf5_edits.h), read back.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "hdf5_edits.h"
#include "store/neighbor_table.h"

namespace {

std::string valid_table() {
  kvf::NeighborTable table;
  table.top_n = 2;
  table.chunk_ids = {11, 22, 33};
  table.rows = {1, 2, 0, -1, 1, 0};
  table.scores = {0.9f, 0.5f, 0.9f, 0, 0.7f, 0.5f};
  const std::string path = kvf::fuzz::scratch_path("valid-neighbors.h5");
  table.write(path);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string valid = valid_table();
  const std::string path = kvf::fuzz::scratch_path("neighbors.h5");
  kvf::fuzz::write_edited_hdf5(valid, data, size, path);
  try {
    kvf::NeighborTable::read(path);
  } catch (const kvf::Error&) {
  }
  return 0;
}
