// Files written the way a store commits them (docs/store.md, "Commit protocol"): under a temporary name that
// holds the writer's pid (two processes never share one), every write checked through fsync and close, then
// renamed into place and the directory synced. A write that fails leaves no temporary behind and the final
// name untouched, so a full disk is an error and never a truncated file in place.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

namespace kvf {

// "<final_path>.<pid>.tmp".
std::string temp_path_for(const std::string& final_path);

// A file name of exactly that form, split: "chunks.h5.4242.tmp" is chunks.h5 written by pid 4242.
struct TempName {
  std::string final_name;  // non-empty
  long pid = 0;            // positive
};
// The parts of a temporary's file name (no directory); nullopt for any other name, "notes.tmp" or "a.h5.x1.tmp"
// among them: kvfuse only ever removes names it could have written.
std::optional<TempName> parse_temp_name(const std::string& file_name);
bool is_temp_name(const std::string& file_name);  // parse_temp_name succeeds

// fsync of a path opened with `flags` (O_RDONLY for a file, O_RDONLY | O_DIRECTORY for a directory).
void sync_path(const std::string& path, int flags);

// One file being written: the caller writes temp(), then commit() makes it the final file. Destroyed
// uncommitted (an exception on the way), it removes the temporary.
class PendingFile {
 public:
  explicit PendingFile(std::string final_path);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  const std::string& temp() const { return temp_; }
  const std::string& final_path() const { return final_; }
  // fsync the temporary, rename it over the final path, fsync the directory; throws kvf::Error naming the
  // path and the reason (the temporary is removed).
  void commit();

 private:
  std::string final_, temp_;
  bool committed_ = false;
};

// fflush, fsync and fclose of a stream written to `path`, each checked: buffered data that did not reach the
// disk (ENOSPC, EFBIG, EIO) is a kvf::Error naming the path, never a silent short file. Closes in every case.
void close_stream_checked(std::FILE* f, const std::string& path);

}  // namespace kvf
