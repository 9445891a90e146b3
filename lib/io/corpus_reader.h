// Corpus input of `kvprep chunk`: a JSONL file of documents {"id": ..., "title": ..., "text": ...} or a directory
// of .txt files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

struct Document {
  std::string id;     // JSONL: the "id" field, an integer written in decimal; directory: the path relative to it
  std::string title;  // JSONL: "title" (optional, may be null); directory: the file name without extension
  std::string text;
};

struct Corpus {
  std::vector<Document> documents;  // input order (directory: sorted by path); texts that are not blank
  size_t skipped_empty = 0;         // documents whose text is empty or only whitespace
  // XXH3-64 over everything read (and, for a directory, the file names), so a rerun can tell an unchanged input.
  uint64_t content_hash = 0;
};

// Reads a whole corpus. JSONL rules: one object per line (blank lines are ignored); "id" a non-empty string or an
// integer; "text" a string; "title" a string or null when present; other fields are ignored; ids are unique. Text
// must be UTF-8 without NUL characters. A directory is searched recursively for *.txt files.
// Every problem is collected before failing: the kvf::Error lists them as "<file>:<line>: ..." (the first 20,
// then how many more), a duplicate id naming both lines. A corpus with no text at all is an error too.
Corpus read_corpus(const std::string& path);

}  // namespace kvf
