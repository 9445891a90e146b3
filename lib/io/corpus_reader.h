// Corpus input of `kvprep chunk`: a JSONL file of documents {"id": ..., "title": ..., "text": ...}, plain or
// gzip-compressed (io/text_lines.h: told by its magic bytes; a truncated stream is an error naming the file), or a
// directory of .txt files.
#pragma once
#include <cstdint>
#include <functional>
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

// What scan_corpus learns in its pass over a corpus.
struct CorpusSummary {
  size_t documents = 0;      // with text
  size_t skipped_empty = 0;  // whose text is empty or only whitespace
  uint64_t content_hash = 0; // as Corpus::content_hash
};

// A corpus of any size in two passes, never whole in memory: scan_corpus checks every record by the rules of
// read_corpus (throwing the same kvf::Error) and hashes the input, holding only the ids; stream_corpus then hands
// the documents with text to `on_batch` in input order, up to `batch_documents` at a time (the vector may be
// moved from). Call stream_corpus only on a corpus scan_corpus passed.
CorpusSummary scan_corpus(const std::string& path);
void stream_corpus(const std::string& path, size_t batch_documents,
                   const std::function<void(std::vector<Document>&)>& on_batch);

// Reads a whole corpus (scan_corpus, then every batch of stream_corpus). JSONL rules: one object per line (blank lines are ignored); "id" a non-empty string or an
// integer; "text" a string; "title" a string or null when present; other fields are ignored; ids are unique. Text
// must be UTF-8 without NUL characters. A directory is searched recursively for *.txt files.
// Every problem is collected before failing: the kvf::Error lists them as "<file>:<line>: ..." (the first 20,
// then how many more), a duplicate id naming both lines. A corpus with no text at all is an error too.
Corpus read_corpus(const std::string& path);

}  // namespace kvf
