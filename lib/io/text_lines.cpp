#include "io/text_lines.h"

#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/regular_file.h"

namespace kvf {

// zlib reads a plain file unchanged (gzdirect), so one reader serves both.
struct TextLines::File {
  std::string path;
  gzFile f = nullptr;
  uint64_t total = 0;  // decompressed bytes read

  explicit File(const std::string& p) : path(p) {
    const RegularFile file(path);  // never a FIFO or device: gzdopen reads this descriptor
    const int fd = ::dup(file.fd());
    KVF_CHECK(fd >= 0, path, ": cannot open");
    f = gzdopen(fd, "rb");
    if (!f) ::close(fd);
    KVF_CHECK(f, path, ": cannot open");
    gzbuffer(f, 1 << 17);
  }
  ~File() {
    if (f) gzclose(f);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Up to `size` bytes into `out`; 0 at the end of a whole input. Throws for a stream that ends early or is damaged.
  size_t read(char* out, unsigned size) {
    const int n = gzread(f, out, size);
    if (n > 0) {
      total += (uint64_t)n;
      return (size_t)n;
    }
    int err = Z_OK;
    const std::string message = gzerror(f, &err);
    KVF_CHECK(err != Z_BUF_ERROR, path, ": the gzip stream ends early, after ", total,
              " decompressed bytes: a truncated copy?");
    KVF_CHECK(n == 0 && err == Z_OK, path, ": read failed: ", message);
    return 0;
  }
};

TextLines::TextLines(const std::string& path) : file_(std::make_unique<File>(path)), path_(path) {}
TextLines::~TextLines() = default;

bool TextLines::gzip() const { return file_->total > 0 && gzdirect(file_->f) == 0; }

bool TextLines::fill() {
  if (at_end_) return false;
  buffer_.erase(0, begin_);
  begin_ = 0;
  const size_t old = buffer_.size();
  constexpr unsigned kChunk = 1 << 16;
  buffer_.resize(old + kChunk);
  const size_t n = file_->read(&buffer_[old], kChunk);
  buffer_.resize(old + n);
  if (n == 0) at_end_ = true;
  return n > 0;
}

bool TextLines::next(std::string& line) {
  size_t searched = begin_;
  for (;;) {
    const size_t newline = buffer_.find('\n', searched);
    if (newline != std::string::npos) {
      line.assign(buffer_, begin_, newline - begin_);
      begin_ = newline + 1;
      ended_by_newline_ = true;
      break;
    }
    searched = buffer_.size() - begin_;  // relative: fill() moves the unread text to the front
    if (!fill()) {
      if (begin_ == buffer_.size()) return false;
      line.assign(buffer_, begin_, std::string::npos);
      begin_ = buffer_.size();
      ended_by_newline_ = false;
      break;
    }
  }
  ++line_number_;
  bytes_ += line.size() + (ended_by_newline_ ? 1 : 0);
  return true;
}

std::string read_text_file(const std::string& path, uint64_t max_bytes) {
  TextLines::File file(path);
  std::string out;
  char buf[1 << 16];
  while (const size_t n = file.read(buf, sizeof buf)) {
    KVF_CHECK(out.size() + n <= max_bytes, path, ": more than ", max_bytes, " bytes of text");
    out.append(buf, n);
  }
  return out;
}

}  // namespace kvf
