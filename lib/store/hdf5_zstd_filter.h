// Zstandard as an HDF5 filter, registered in this process under the id HDF5's filter registry gives zstd (32015),
// with the same stored form as the public plugin (one zstd frame per HDF5 chunk, its content size in the frame
// header; client value 0 the level), so h5py with hdf5plugin reads the store's zstd datasets too.
#pragma once
#include <hdf5.h>

namespace kvf::h5 {

inline constexpr H5Z_filter_t kZstdFilterId = 32015;

// Registers the filter once per process (later calls do nothing). Throws kvf::Error when HDF5 refuses it.
void register_zstd_filter();

}  // namespace kvf::h5
