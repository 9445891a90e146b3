// An exclusive flock on a lock file, held for a command's whole run, with the holder's name (pid, host, command
// line) written into the file so that a refused second process can say who holds it. The kernel releases a flock
// when its holder exits, however it exits, so a killed process never leaves a lock behind.
#pragma once
#include <string>

namespace kvf {

class FolderLock {
 public:
  // Takes the lock on `lock_path` (created when missing). When another process holds it: waits when `wait`,
  // else throws kvf::Error "<busy>: held by <holder>; <advice>".
  static FolderLock acquire(const std::string& lock_path, bool wait, const std::string& busy,
                            const std::string& advice);

  FolderLock(FolderLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FolderLock& operator=(FolderLock&&) = delete;
  FolderLock(const FolderLock&) = delete;
  ~FolderLock();  // releases the lock
  bool held() const { return fd_ >= 0; }

 private:
  explicit FolderLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kvf
