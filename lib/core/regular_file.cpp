#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace kvf {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "an unknown kind of file";
}

[[noreturn]] void refuse(const std::string& path, mode_t mode) {
  fail(path, ": is ", kind_of(mode), ", not a regular file");
}

// stat() follows symlinks: a link to a regular file is one (the Hugging Face cache links every file to a blob).
struct stat stat_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, ": cannot open: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
  return st;
}

}  // namespace

RegularFile::RegularFile(const std::string& path) {
  // Checked before opening, so that a FIFO or a device is never opened (opening a device can act on it), and
  // after, on the open descriptor: O_NONBLOCK keeps the open from blocking should the path have become a FIFO since.
  stat_regular(path);
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fail(path, ": cannot stat: ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    refuse(path, st.st_mode);
  }
  size_ = (uint64_t)st.st_size;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string file_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return kind_of(st.st_mode);
  return errno == ENOENT ? "missing" : std::string("unreadable (") + std::strerror(errno) + ")";
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes) {
  const RegularFile file(path);
  KVF_CHECK(file.size() <= max_bytes, path, ": ", file.size(), " bytes, more than the ", max_bytes,
            " bytes such a file may have");
  std::string out((size_t)file.size(), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(file.fd(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, ": read failed: ", std::strerror(errno));
    if (n == 0) break;  // shrunk while being read: what is there is all there is
    done += (size_t)n;
  }
  out.resize(done);
  return out;
}

}  // namespace kvf
