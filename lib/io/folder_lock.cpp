#include "io/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/regular_file.h"

namespace kvf {
namespace {

// "pid 123 on host h: kvrun eval --out o": what a refused process is told.
std::string holder_line() {
  std::string command;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  for (std::string arg; std::getline(in, arg, '\0');) command += (command.empty() ? "" : " ") + arg;
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  return "pid " + std::to_string(::getpid()) + " on host " + host + ": " + (command.empty() ? "?" : command);
}

std::string read_holder(int fd) {
  std::string text(512, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? (size_t)n : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "a process that has not written its name yet" : text;
}

}  // namespace

FolderLock FolderLock::acquire(const std::string& lock_path, bool wait, const std::string& busy,
                               const std::string& advice) {
  const std::string kind = file_kind(lock_path);
  KVF_CHECK(kind == "missing" || kind == "a regular file", lock_path, ": the lock file is ", kind);
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  KVF_CHECK(fd >= 0, lock_path, ": cannot open the lock file: ", std::strerror(errno));
  FolderLock lock(fd);
  while (::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    KVF_CHECK(errno == EWOULDBLOCK, lock_path, ": cannot lock: ", std::strerror(errno));
    fail(busy, " (", read_holder(fd), "); ", advice);
  }
  // The holder's name only feeds messages: a full disk must not stop a process that could free space.
  const std::string me = holder_line() + "\n";
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) != (ssize_t)me.size()) (void)::ftruncate(fd, 0);
  return lock;
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace kvf
