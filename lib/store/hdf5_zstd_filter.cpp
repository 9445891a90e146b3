#include "store/hdf5_zstd_filter.h"

#include <zstd.h>

#include <mutex>

#include "core/error.h"

namespace kvf::h5 {
namespace {

// HDF5's filter callback: compresses (or, with H5Z_FLAG_REVERSE, decompresses) *buf's nbytes into a new buffer
// that replaces *buf. Returns the new length, 0 on failure (HDF5 then reports the filter as failed).
size_t zstd_filter(unsigned flags, size_t n_values, const unsigned values[], size_t nbytes, size_t* buf_size,
                   void** buf) {
  if (flags & H5Z_FLAG_REVERSE) {
    const unsigned long long size = ZSTD_getFrameContentSize(*buf, nbytes);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return 0;
    void* out = H5allocate_memory(size ? size : 1, false);
    if (!out) return 0;
    const size_t got = ZSTD_decompress(out, size, *buf, nbytes);
    if (ZSTD_isError(got) || got != size) {
      H5free_memory(out);
      return 0;
    }
    H5free_memory(*buf);
    *buf = out;
    *buf_size = size;
    return got;
  }
  const int level = n_values > 0 ? (int)values[0] : ZSTD_CLEVEL_DEFAULT;
  const size_t bound = ZSTD_compressBound(nbytes);
  void* out = H5allocate_memory(bound, false);
  if (!out) return 0;
  const size_t got = ZSTD_compress(out, bound, *buf, nbytes, level);
  if (ZSTD_isError(got)) {
    H5free_memory(out);
    return 0;
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = bound;
  return got;
}

}  // namespace

void register_zstd_filter() {
  static std::once_flag once;
  std::call_once(once, [] {
    static const H5Z_class2_t filter = {H5Z_CLASS_T_VERS, kZstdFilterId, 1, 1, "zstd", nullptr, nullptr, zstd_filter};
    KVF_CHECK(H5Zregister(&filter) >= 0, "HDF5 refused to register the zstd filter (", kZstdFilterId, ")");
  });
}

}  // namespace kvf::h5
