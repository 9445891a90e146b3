#include "store/store_lock.h"

#include <filesystem>

#include "core/error.h"

namespace kvf {

namespace fs = std::filesystem;

StoreLock StoreLock::acquire(const std::string& store_dir, bool wait, bool create_dir) {
  require_store_folder(store_dir);
  StoreLock lock;
  std::error_code ec;
  if (!fs::is_directory(store_dir, ec)) {
    if (!create_dir) return lock;
    fs::create_directories(store_dir, ec);
    KVF_CHECK(!ec, "store ", store_dir, ": cannot create the directory: ", ec.message());
  }
  lock.lock_.emplace(FolderLock::acquire((fs::path(store_dir) / kStoreLockFile).string(), wait,
                                         "store " + store_dir + " is being written by another kvprep",
                                         "wait for it to finish, or pass --wait-lock to wait"));
  remove_stale_temporaries(store_dir);
  return lock;
}

}  // namespace kvf
