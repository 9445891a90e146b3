#include "store/embedding_table.h"

#include "core/error.h"
#include "core/hex.h"
#include "io/durable_file.h"
#include "store/hdf5_file.h"
#include "store/manifest.h"
#include "store/store_format.h"

namespace kvf {
namespace {
constexpr const char* kMagic = "kvfuse-embeddings";
}  // namespace

EmbeddingTable EmbeddingTable::read(const std::string& path) {
  const h5::File f = h5::File::open_read(path);
  f.read_format(kMagic, kEmbeddingTableFormatVersion);  // version 1 is the only one so far
  EmbeddingTable t;
  t.embedder_fingerprint = parse_hex64(f.read_string_attribute("embedder_fingerprint"), path);
  t.chunk_ids = f.read<uint64_t>("chunk_id", {-1});
  std::vector<uint64_t> shape;
  t.vectors = f.read<float>("embedding", {(int64_t)t.chunk_ids.size(), -1}, &shape);
  t.dim = (int)shape[1];
  KVF_CHECK(t.dim > 0, path, ": dataset 'embedding' has dimension 0");
  return t;
}

void EmbeddingTable::write(const std::string& path) const {
  PendingFile out(path);
  write(out);
  out.commit();
}

void EmbeddingTable::write(PendingFile& out) const {
  KVF_CHECK(vectors.size() == rows() * (size_t)dim, "embedding table: ", vectors.size(), " values for ", rows(),
            " rows of ", dim);
  h5::File f = h5::File::create(out.temp());
  f.write_format(kMagic, kEmbeddingTableFormatVersion);
  f.write_string_attribute("embedder_fingerprint", hex64(embedder_fingerprint));
  f.write<uint64_t>("chunk_id", {rows()}, chunk_ids.data());
  f.write<float>("embedding", {rows(), (uint64_t)dim}, vectors.data());
  f.close();
}

}  // namespace kvf
