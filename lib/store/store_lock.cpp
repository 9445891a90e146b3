#include "store/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// "pid 123 on host h: kvprep prefill --store s": what a refused writer is told.
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

StoreLock StoreLock::acquire(const std::string& store_dir, bool wait, bool create_dir) {
  require_store_folder(store_dir);
  std::error_code ec;
  if (!fs::is_directory(store_dir, ec)) {
    if (!create_dir) return StoreLock(-1);
    fs::create_directories(store_dir, ec);
    KVF_CHECK(!ec, "store ", store_dir, ": cannot create the directory: ", ec.message());
  }
  const std::string path = (fs::path(store_dir) / kStoreLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  KVF_CHECK(fd >= 0, path, ": cannot open the store lock: ", std::strerror(errno));
  StoreLock lock(fd);
  while (::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    KVF_CHECK(errno == EWOULDBLOCK, path, ": cannot lock: ", std::strerror(errno));
    fail("store ", store_dir, " is being written by another kvprep (", read_holder(fd),
         "); wait for it to finish, or pass --wait-lock to wait");
  }
  // The holder's name only feeds messages: a full disk must not stop a writer that could free space.
  const std::string me = holder_line() + "\n";
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) != (ssize_t)me.size()) (void)::ftruncate(fd, 0);
  remove_stale_temporaries(store_dir);
  return lock;
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

}  // namespace kvf
