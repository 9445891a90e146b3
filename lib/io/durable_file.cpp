#include "io/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace kvf {

namespace fs = std::filesystem;

std::string temp_path_for(const std::string& final_path) {
  return final_path + "." + std::to_string(::getpid()) + ".tmp";
}

bool is_temp_name(const std::string& name) { return name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0; }

void sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  KVF_CHECK(fd >= 0, path, ": cannot open to sync: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  KVF_CHECK(rc == 0, path, ": fsync failed: ", std::strerror(err));
}

PendingFile::PendingFile(std::string final_path) : final_(std::move(final_path)), temp_(temp_path_for(final_)) {}

PendingFile::~PendingFile() {
  if (!committed_) ::unlink(temp_.c_str());  // absent when nothing was written: ENOENT is fine
}

void PendingFile::commit() {
  sync_path(temp_, O_RDONLY);
  KVF_CHECK(::rename(temp_.c_str(), final_.c_str()) == 0, "cannot rename ", temp_, " to ", final_, ": ",
            std::strerror(errno));
  committed_ = true;
  const fs::path parent = fs::path(final_).parent_path();
  sync_path(parent.empty() ? "." : parent.string(), O_RDONLY | O_DIRECTORY);
}

void close_stream_checked(std::FILE* f, const std::string& path) {
  int err = 0;
  if (std::fflush(f) != 0 || std::ferror(f)) err = errno ? errno : EIO;
  if (!err && ::fsync(::fileno(f)) != 0) err = errno;
  if (std::fclose(f) != 0 && !err) err = errno;
  KVF_CHECK(err == 0, path, ": cannot write: ", std::strerror(err));
}

}  // namespace kvf
