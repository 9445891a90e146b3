// Every file kvfuse reads as input (model files, tokenizer and config JSON, chat templates) is opened here: only a
// regular file, after following symlinks, is read. A FIFO would block the open or the read for ever, a device can
// be endless or act on open, a socket or a folder has no content to read; each is refused with a message naming
// the path and what it is.
#pragma once
#include <cstdint>
#include <string>

namespace kvf {

// An open, read-only regular file. Throws kvf::Error "<path>: ..." when it is missing, cannot be opened or is
// anything but a regular file.
class RegularFile {
 public:
  explicit RegularFile(const std::string& path);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// What `path` is, following symlinks: "a regular file", "a folder", "a FIFO", "a socket", "a character device",
// "a block device"; "missing" when it does not exist; "unreadable (<reason>)" when stat fails otherwise.
std::string file_kind(const std::string& path);

// The whole content of a regular file of at most max_bytes (a larger one is refused, naming both sizes).
std::string read_regular_file(const std::string& path, uint64_t max_bytes = uint64_t(1) << 30);

}  // namespace kvf
