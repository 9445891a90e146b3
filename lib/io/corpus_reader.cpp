#include "io/corpus_reader.h"

#include <utf8proc.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "io/text_lines.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxProblemsShown = 20;
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The problems found so far; reading goes on after one so that a single run shows them all.
class Problems {
 public:
  template <typename... Parts>
  void add(const std::string& where, const Parts&... parts) {
    std::ostringstream os;
    detail::append(os, where, ": ", parts...);
    list_.push_back(os.str());
  }
  void throw_if_any(const std::string& path) const {
    if (list_.empty()) return;
    std::string shown;
    for (size_t i = 0; i < std::min(list_.size(), kMaxProblemsShown); ++i) shown += "\n  " + list_[i];
    if (list_.size() > kMaxProblemsShown)
      shown += "\n  ... and " + std::to_string(list_.size() - kMaxProblemsShown) + " more";
    fail("corpus ", path, ": ", list_.size(), list_.size() == 1 ? " problem:" : " problems:", shown);
  }

 private:
  std::vector<std::string> list_;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  KVF_CHECK(in, "corpus: cannot open ", path.string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  KVF_CHECK(!in.bad(), "corpus: error reading ", path.string());
  return bytes;
}

// Offset of the first byte that does not start a valid UTF-8 character, or npos.
size_t first_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cpt = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                                (utf8proc_ssize_t)(text.size() - i), &cpt);
    if (n <= 0) return i;
    i += (size_t)n;
  }
  return std::string_view::npos;
}

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isspace((unsigned char)c) != 0; });
}

std::string_view without_bom(std::string_view text) {
  return text.substr(0, kUtf8Bom.size()) == kUtf8Bom ? text.substr(kUtf8Bom.size()) : text;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest says where and what.
std::string parse_message(const json::exception& e) {
  const std::string_view what = e.what();
  const size_t close = what.find("] ");
  return std::string(close == std::string_view::npos ? what : what.substr(close + 2));
}

std::string shown_value(const json& value) {
  constexpr size_t kMaxShown = 40;
  std::string text = value.dump();
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "...";
  return std::string(value.type_name()) + " " + text;
}

// A string field of a JSONL record; false (and a problem) when it has the wrong type or a NUL character.
bool string_field(const json& value, const char* name, const std::string& where, Problems& problems, std::string& out) {
  if (!value.is_string()) {
    problems.add(where, "field '", name, "' must be a string, got ", shown_value(value));
    return false;
  }
  out = value.get<std::string>();
  if (out.find('\0') != std::string::npos) {
    problems.add(where, "field '", name, "' contains a NUL character");
    return false;
  }
  return true;
}

bool id_field(const json& record, const std::string& where, Problems& problems, std::string& id) {
  const auto it = record.find("id");
  if (it == record.end()) {
    problems.add(where, "missing field 'id'");
    return false;
  }
  if (it->is_number_integer()) {  // unsigned included
    id = it->dump();
    return true;
  }
  if (!it->is_string()) {
    problems.add(where, "field 'id' must be a string or an integer, got ", shown_value(*it));
    return false;
  }
  if (!string_field(*it, "id", where, problems, id)) return false;
  if (id.empty()) {
    problems.add(where, "field 'id' is empty");
    return false;
  }
  return true;
}

// One JSONL line into `doc`; false when the line has a problem (recorded).
bool parse_record(std::string_view line, const std::string& where, Problems& problems, Document& doc) {
  json record;
  try {
    record = json::parse(line.begin(), line.end());
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large for a double
    problems.add(where, "invalid JSON: ", parse_message(e));
    return false;
  }
  if (!record.is_object()) {
    problems.add(where, "expected a JSON object, got ", shown_value(record));
    return false;
  }
  bool ok = id_field(record, where, problems, doc.id);
  const auto text = record.find("text");
  if (text == record.end()) {
    problems.add(where, "missing field 'text'");
    ok = false;
  } else {
    ok = string_field(*text, "text", where, problems, doc.text) && ok;
  }
  const auto title = record.find("title");
  doc.title.clear();
  if (title != record.end() && !title->is_null()) ok = string_field(*title, "title", where, problems, doc.title) && ok;
  return ok;
}

// Hashes what is read as it streams past (the same value as XXH3 over the whole input at once).
class StreamHash {
 public:
  StreamHash() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~StreamHash() { XXH3_freeState(state_); }
  StreamHash(const StreamHash&) = delete;
  StreamHash& operator=(const StreamHash&) = delete;
  void add(const void* data, size_t n) { XXH3_64bits_update(state_, data, n); }
  uint64_t digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

// Each line of a JSONL file (plain or gzip: io/text_lines.h), numbered from 1, read a line at a time; feeds `hash`
// every byte of the text (so a gzip copy of a corpus hashes as the corpus).
template <typename Visit>
void for_each_line(const std::string& path, StreamHash& hash, const Visit& visit) {
  TextLines lines(path);
  std::string line;
  while (lines.next(line)) {
    hash.add(line.data(), line.size());
    if (lines.ended_by_newline()) hash.add("\n", 1);
    visit(lines.line_number() == 1 ? without_bom(line) : std::string_view(line), lines.line_number());
  }
}

// Pass 1 over a JSONL file: every record checked, ids unique, documents counted. Holds only the ids.
void scan_jsonl(const std::string& path, CorpusSummary& summary, Problems& problems) {
  std::unordered_map<std::string, size_t> first_line;  // id -> line it first appeared on
  StreamHash hash;
  for_each_line(path, hash, [&](std::string_view line, size_t line_no) {
    if (is_blank(line)) return;
    const std::string where = path + ":" + std::to_string(line_no);
    Document doc;
    if (!parse_record(line, where, problems, doc)) return;
    const auto [it, inserted] = first_line.emplace(doc.id, line_no);
    if (!inserted) {
      problems.add(where, "duplicate id '", doc.id, "' (first at line ", it->second, ")");
      return;
    }
    ++(is_blank(doc.text) ? summary.skipped_empty : summary.documents);
  });
  summary.content_hash = hash.digest();
}

// Pass 2 over a file pass 1 found sound: its documents with text, in order.
void stream_jsonl(const std::string& path, const std::function<void(Document&&)>& emit) {
  StreamHash unused;
  Problems none;
  for_each_line(path, unused, [&](std::string_view line, size_t line_no) {
    Document doc;
    if (is_blank(line) || !parse_record(line, path + ":" + std::to_string(line_no), none, doc) || is_blank(doc.text))
      return;
    emit(std::move(doc));
  });
}

// 1-based line of a byte offset, for messages about a text file.
size_t line_of(std::string_view text, size_t offset) {
  return 1 + (size_t)std::count(text.begin(), text.begin() + (std::ptrdiff_t)offset, '\n');
}

// The .txt files of a directory, sorted by their names relative to it (so the order does not depend on the file
// system).
std::vector<fs::path> text_files(const std::string& path) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path)) {
    if (entry.is_regular_file() && entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return a.lexically_relative(path).generic_string() < b.lexically_relative(path).generic_string();
  });
  KVF_CHECK(!files.empty(), "corpus ", path, ": directory holds no .txt files");
  return files;
}

// Each file of a directory as a document (empty text when it has a problem, which goes to `problems`), one file
// in memory at a time. The hash covers each file's name and the hash of its bytes, so renaming a file or moving
// text changes it.
template <typename Visit>
uint64_t for_each_text_file(const std::string& path, Problems& problems, const Visit& visit) {
  StreamHash listing;
  for (const fs::path& file : text_files(path)) {
    const std::string bytes = read_file(file);
    const std::string id = file.lexically_relative(path).generic_string();
    const uint64_t file_hash = XXH3_64bits(bytes.data(), bytes.size());
    listing.add(id.c_str(), id.size() + 1);
    listing.add(&file_hash, sizeof file_hash);

    const std::string_view text = without_bom(bytes);
    if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
      problems.add(file.string() + ":" + std::to_string(line_of(text, bad)), "invalid UTF-8 at byte ",
                   bad + (bytes.size() - text.size()));
      continue;
    }
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
      problems.add(file.string() + ":" + std::to_string(line_of(text, nul)), "NUL character at byte ", nul);
      continue;
    }
    visit(Document{id, file.stem().string(), std::string(text)});
  }
  return listing.digest();
}

}  // namespace

CorpusSummary scan_corpus(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  KVF_CHECK(fs::exists(status), "corpus ", path, ": no such file or directory");
  CorpusSummary summary;
  Problems problems;
  if (fs::is_directory(status)) {
    summary.content_hash = for_each_text_file(path, problems, [&](const Document& doc) {
      ++(is_blank(doc.text) ? summary.skipped_empty : summary.documents);
    });
  } else {
    scan_jsonl(path, summary, problems);
  }
  problems.throw_if_any(path);
  KVF_CHECK(summary.documents > 0, "corpus ", path, ": no document has any text (", summary.skipped_empty,
            " empty)");
  return summary;
}

void stream_corpus(const std::string& path, size_t batch_documents,
                   const std::function<void(std::vector<Document>&)>& on_batch) {
  std::vector<Document> batch;
  const auto emit = [&](Document&& doc) {
    if (is_blank(doc.text)) return;
    batch.push_back(std::move(doc));
    if (batch.size() >= std::max<size_t>(1, batch_documents)) {
      on_batch(batch);
      batch.clear();
    }
  };
  if (fs::is_directory(path)) {
    Problems ignored;  // scan_corpus reported them
    for_each_text_file(path, ignored, [&](Document&& doc) { emit(std::move(doc)); });
  } else {
    stream_jsonl(path, emit);
  }
  if (!batch.empty()) on_batch(batch);
}

Corpus read_corpus(const std::string& path) {
  const CorpusSummary summary = scan_corpus(path);
  Corpus corpus;
  corpus.skipped_empty = summary.skipped_empty;
  corpus.content_hash = summary.content_hash;
  stream_corpus(path, 1024, [&](std::vector<Document>& batch) {
    for (Document& d : batch) corpus.documents.push_back(std::move(d));
  });
  return corpus;
}

}  // namespace kvf
