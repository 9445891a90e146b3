#include "store/neighbor_table.h"

#include "core/error.h"
#include "io/durable_file.h"
#include "store/hdf5_file.h"
#include "store/manifest.h"
#include "store/store_format.h"

namespace kvf {
namespace {
constexpr const char* kMagic = "kvfuse-neighbors";
}  // namespace

NeighborTable NeighborTable::read(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  f.read_format(kMagic, kNeighborTableFormatVersion);  // version 1 is the only one so far
  NeighborTable t;
  t.chunk_ids = f.read<uint64_t>("chunk_id", {-1});
  const int64_t n = (int64_t)t.chunk_ids.size();
  std::vector<uint64_t> shape;
  t.rows = f.read<int64_t>("neighbor_row", {n, -1}, &shape);
  t.top_n = (int)shape[1];
  t.scores = f.read<float>("score", {n, t.top_n});
  for (size_t i = 0; i < t.rows.size(); ++i)
    KVF_CHECK(t.rows[i] >= -1 && t.rows[i] < n, path, ": neighbor_row[", i / t.top_n, "][", i % t.top_n, "] = ",
              t.rows[i], " is outside [-1, ", n, ")");
  return t;
}

void NeighborTable::write(const std::string& path) const {
  PendingFile out(path);
  write(out);
  out.commit();
}

void NeighborTable::write(PendingFile& out) const {
  KVF_CHECK(rows.size() == size() * (size_t)top_n && scores.size() == rows.size(), "neighbor table: ", rows.size(),
            " entries for ", size(), " chunks x ", top_n);
  h5::File f = h5::File::create(out.temp());
  f.write_format(kMagic, kNeighborTableFormatVersion);
  f.write<uint64_t>("chunk_id", {size()}, chunk_ids.data());
  f.write<int64_t>("neighbor_row", {size(), (uint64_t)top_n}, rows.data());
  f.write<float>("score", {size(), (uint64_t)top_n}, scores.data());
  f.close();
}

}  // namespace kvf
