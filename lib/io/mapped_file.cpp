#include "io/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/regular_file.h"

namespace kvf {

MappedFile::MappedFile(const std::string& path) {
  const RegularFile file(path);  // never a FIFO or device: mapping one would block or fail
  if (file.size() == 0) return;
  void* m = ::mmap(nullptr, (size_t)file.size(), PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (m == MAP_FAILED) fail(path, ": cannot map ", file.size(), " bytes: ", std::strerror(errno));
  data_ = static_cast<const uint8_t*>(m);
  size_ = (size_t)file.size();
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace kvf
