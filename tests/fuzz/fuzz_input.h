// The readers take paths, so a fuzz target writes its input to a file first: one scratch folder per process
// (under /dev/shm where it exists, else $TMPDIR or /tmp), removed at exit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvf::fuzz {

// <scratch>/<name>, created on first use.
std::string scratch_path(const std::string& name);
// Writes the bytes to <scratch>/<name> (replacing it) and returns that path.
std::string write_input(const std::string& name, const uint8_t* data, size_t size);

}  // namespace kvf::fuzz
