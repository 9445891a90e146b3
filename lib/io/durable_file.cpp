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

std::optional<TempName> parse_temp_name(const std::string& file_name) {
  constexpr size_t kMaxPidDigits = 18;  // fits a long
  const size_t suffix = file_name.size() >= 4 ? file_name.size() - 4 : std::string::npos;
  if (suffix == std::string::npos || file_name.compare(suffix, 4, ".tmp") != 0) return std::nullopt;
  const size_t dot = file_name.rfind('.', suffix - 1);
  if (dot == std::string::npos || dot == 0 || suffix - dot - 1 == 0 || suffix - dot - 1 > kMaxPidDigits)
    return std::nullopt;
  long pid = 0;
  for (size_t i = dot + 1; i < suffix; ++i) {
    if (file_name[i] < '0' || file_name[i] > '9') return std::nullopt;
    pid = pid * 10 + (file_name[i] - '0');
  }
  if (pid <= 0 || file_name.find('/') != std::string::npos) return std::nullopt;
  return TempName{file_name.substr(0, dot), pid};
}

bool is_temp_name(const std::string& file_name) { return parse_temp_name(file_name).has_value(); }

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
