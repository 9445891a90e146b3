// One writer per store. Every kvprep stage that writes takes an exclusive flock on <store>/kvprep.lock for its
// whole run and writes who it is into the file (pid, host, command line). A second writer either waits for the
// lock or fails at once with a message naming the holder (io/folder_lock.h). Readers (kvrun, verify, inspect, search) take no
// lock: they read the last committed manifest and the files it names, which a writer only ever replaces by rename.
// flock is released by the kernel when the holder exits, however it exits, so a killed writer never leaves the
// store locked.
#pragma once
#include <optional>
#include <string>

#include "io/folder_lock.h"
#include "store/store_files.h"

namespace kvf {

class StoreLock {
 public:
  // Takes the lock of `store_dir` (creating the directory when it is missing and create_dir is set; otherwise a
  // missing directory holds nothing to protect and no lock is taken, leaving the stage to report it). When the
  // lock is held elsewhere: waits when `wait`, else throws kvf::Error naming the store and the holder. An existing
  // folder that is no store and not empty is refused before anything is created in it (require_store_folder).
  // Once held, temporaries left by killed writers are removed (remove_stale_temporaries): no writer is alive.
  static StoreLock acquire(const std::string& store_dir, bool wait, bool create_dir = false);

  bool held() const { return lock_.has_value(); }

 private:
  std::optional<FolderLock> lock_;  // empty when there was no folder to lock
};

}  // namespace kvf
