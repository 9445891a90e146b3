// embeddings.h5 (store/embedding_table.h): a valid table edited by the input (hdf5_edits.h), read back.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "hdf5_edits.h"
#include "store/embedding_table.h"

namespace {

std::string valid_table() {
  kvf::EmbeddingTable table;
  table.embedder_fingerprint = 0x8c3e1d5a0b7f2e64;
  table.dim = 4;
  table.chunk_ids = {11, 22, 33};
  table.vectors = {1, 0, 0, 0, 0, 0.6f, 0.8f, 0, 0.5f, 0.5f, 0.5f, 0.5f};
  const std::string path = kvf::fuzz::scratch_path("valid-embeddings.h5");
  table.write(path);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string valid = valid_table();
  const std::string path = kvf::fuzz::scratch_path("embeddings.h5");
  kvf::fuzz::write_edited_hdf5(valid, data, size, path);
  try {
    kvf::EmbeddingTable::read(path);
  } catch (const kvf::Error&) {
  }
  return 0;
}
