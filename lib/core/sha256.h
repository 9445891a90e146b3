// SHA-256 (FIPS 180-4) of bytes and of files: what data/datasets.json and scripts/get_data.py check the benchmark
// data sets against, and what an eval sweep records of the data set it read (OUT/sweep.json).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvf {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest of everything given; the object is then spent (update or finish again throws kvf::Error).
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t bytes_ = 0;
  bool finished_ = false;
};

// The 64-digit lower-case hex digest of `data` (sha256sum's form).
std::string sha256_hex(std::string_view data);

// The hex digest of a regular file's bytes as stored (a .gz file's compressed bytes), read in blocks. Throws
// kvf::Error naming the path when it is missing, not a regular file, or unreadable.
std::string sha256_file(const std::string& path);

}  // namespace kvf
