// How the store's HDF5 files keep a chunked dataset's bytes (h5::File::write_raw), with its text form. Kept apart
// from hdf5_file.h so that headers naming it need not include HDF5's.
#pragma once
#include <string>

namespace kvf::h5 {

// How a chunked dataset's bytes are stored: as they are, or byte-shuffled (HDF5's shuffle filter: the bytes of each
// element grouped by position, a no-op for 1-byte elements) and then deflated (zlib, level 1-9) or zstd-compressed
// (level 1-22; store/hdf5_zstd_filter.h). Text form: "none", "deflate:LEVEL", "zstd:LEVEL".
struct Compression {
  enum class Codec { None, Deflate, Zstd };
  Codec codec = Codec::None;
  int level = 0;
  bool operator==(const Compression& o) const { return codec == o.codec && level == o.level; }
};
std::string compression_name(const Compression& c);
// The highest level a codec takes (deflate 9, zstd 22; levels start at 1); 0 for None.
int max_compression_level(Compression::Codec codec);
// Parses the text form; throws kvf::Error naming `where`, the text and the levels allowed.
Compression parse_compression(const std::string& text, const std::string& where);

}  // namespace kvf::h5
