// KV shards (store/kv_shard.h): a valid f16, bf16, int8 or int4 shard (the input's first byte picks), edited by the
// rest of the input (hdf5_edits.h), opened and every chunk read with its checksum and finiteness checked.
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "hdf5_edits.h"
#include "store/kv_shard.h"

namespace {

constexpr uint64_t kFingerprint = 0x1f0c6f0e5a2b9d47;

// Three layers reading two stored layers (layer sharing), two kv heads of four values, two chunks.
std::string valid_shard(kvf::KvDtype dtype, const char* name) {
  kvf::KvShardLayout layout;
  layout.mode = "independent";
  layout.model_fingerprint = kFingerprint;
  layout.n_layers = 3;
  layout.layer_map = {0, 0, 1};
  layout.stored_layers = 2;
  layout.kv_heads = 2;
  layout.head_dim = 4;
  layout.dtype = dtype;
  layout.quant_group = 4;  // int4: K groups of 4 rows after the first (kept in f16), V groups of a head's 4 values
  layout.keep_first = 1;
  kvf::KvShardWriter writer(layout);
  for (uint32_t chunk = 0; chunk < 2; ++chunk) {
    const uint32_t rows = 3 - chunk;
    std::vector<float> k(rows * layout.row_elems()), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
      v[i] = 0.125f * static_cast<float>(i % 5) + chunk;
    }
    std::vector<int32_t> positions(rows);
    for (uint32_t r = 0; r < rows; ++r) positions[r] = static_cast<int32_t>(2 * r);
    writer.add_chunk(100 + chunk, k.data(), v.data(), positions.data(), rows, chunk);
  }
  const std::string path = kvf::fuzz::scratch_path(name);
  writer.write(path);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string valid[] = {valid_shard(kvf::KvDtype::F16, "valid-f16.h5"),
                                      valid_shard(kvf::KvDtype::BF16, "valid-bf16.h5"),
                                      valid_shard(kvf::KvDtype::Int8, "valid-int8.h5"),
                                      valid_shard(kvf::KvDtype::Int4, "valid-int4.h5")};
  const std::string path = kvf::fuzz::scratch_path("shard.h5");
  kvf::fuzz::write_edited_hdf5(valid[size > 0 ? data[0] % 4 : 0], size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0,
                               path);
  try {
    const kvf::KvShardReader reader = kvf::KvShardReader::open(path, kFingerprint);
    std::vector<float> k, v;
    std::vector<int32_t> positions;
    for (size_t entry = 0; entry < reader.index().size(); ++entry) {
      try {
        reader.read_chunk(entry, k, v, positions, true);
      } catch (const kvf::Error&) {
      }
    }
  } catch (const kvf::Error&) {
  }
  return 0;
}
