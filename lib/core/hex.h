// 64-bit hashes (model fingerprints, chunk ids, checksums) as manifests, HDF5 attributes and the CLI write them.
#pragma once
#include <cstdint>
#include <string>

namespace kvf {

// The 16-digit lower-case hex form ("%016llx").
std::string hex64(uint64_t value);
// Reads hex64's form back; throws kvf::Error naming `what` when the text is not 16 lower-case hex digits.
uint64_t parse_hex64(const std::string& text, const std::string& what);

}  // namespace kvf
