// Store files for the HDF5 table and shard fuzz targets: a valid file written by the library's own writer, edited
// as the fuzz input says through the HDF5 API (an attribute or dataset deleted, replaced by one of another type,
// shape or content, or some of its bytes overwritten). What is fuzzed is what kvfuse checks once HDF5 has parsed a
// file: attributes, types, shapes, offsets, bounds and checksums. Damaged bytes below that are HDF5's own parsing;
// for those the store has its whole-file and per-chunk checksums.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvf::fuzz {

// Copies `valid_file` to `out_path` and applies the edits the bytes describe (at most 8; no bytes, no edit).
void write_edited_hdf5(const std::string& valid_file, const uint8_t* data, size_t size, const std::string& out_path);

}  // namespace kvf::fuzz
