// A whole file mapped read-only into memory (model files are read in place, never copied).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvf {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws kvf::Error "<path>: ..." when the file cannot be opened, is not a regular file or cannot be mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }  // nullptr for an empty file
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kvf
