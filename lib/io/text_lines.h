// Text inputs read a line at a time, plain or gzip-compressed: corpus JSONL (io/corpus_reader.h) and question
// files (fusion/query_file.h). Gzip is told by its magic bytes (1f 8b), whatever the file is called; a .gz name on
// plain text reads it as plain. A gzip stream must reach its end and its CRC and length trailer: a copy cut short
// is an error naming the file, never a shorter input; a damaged stream (bad CRC, bad data) is one too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kvf {

class TextLines {
 public:
  // Opens a regular file only (core/regular_file.h); throws kvf::Error "<path>: ..." otherwise.
  explicit TextLines(const std::string& path);
  ~TextLines();
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  // The next line without its '\n' (a '\r' before it is kept), numbered from 1; false after the last line. A last
  // line without '\n' is a line (ended_by_newline() false). Throws kvf::Error naming the file for a gzip stream
  // that ends early or is damaged, once the text before the damage has been returned.
  bool next(std::string& line);
  size_t line_number() const { return line_number_; }  // of the line next() returned last
  bool ended_by_newline() const { return ended_by_newline_; }
  uint64_t bytes_read() const { return bytes_; }  // text returned so far (decompressed), newlines included
  bool gzip() const;  // known once the first next() has read from the file
  const std::string& path() const { return path_; }

 private:
  friend std::string read_text_file(const std::string& path, uint64_t max_bytes);
  bool fill();  // more text into buffer_; false at the end of the input
  struct File;
  std::unique_ptr<File> file_;
  std::string path_;
  std::string buffer_;
  size_t begin_ = 0;  // buffer_'s text not yet returned
  size_t line_number_ = 0;
  bool ended_by_newline_ = false;
  bool at_end_ = false;
  uint64_t bytes_ = 0;
};

// The whole text of a file by TextLines' rules (decompressed when gzip), at most max_bytes of it.
std::string read_text_file(const std::string& path, uint64_t max_bytes = uint64_t(1) << 34);

}  // namespace kvf
