// io/text_lines: plain and gzip text read a line at a time give the same lines and numbers; a gzip stream cut short
// or damaged is an error naming the file, after the lines before it; corpora read through it alike.
#include "io/text_lines.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "io/corpus_reader.h"
#include "support/temp_dir.h"
#include "support/test_values.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);  // 15 + 16: a gzip wrapper
  std::string out(deflateBound(&z, (uLong)text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = (uInt)text.size();
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = (uInt)out.size();
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// (line, number, ended by a newline) for every line of a file.
using Line = std::tuple<std::string, size_t, bool>;
std::vector<Line> lines_of(const fs::path& path, uint64_t* bytes = nullptr, bool* was_gzip = nullptr) {
  TextLines lines(path.string());
  std::vector<Line> out;
  std::string line;
  while (lines.next(line)) out.emplace_back(line, lines.line_number(), lines.ended_by_newline());
  if (bytes) *bytes = lines.bytes_read();
  if (was_gzip) *was_gzip = lines.gzip();
  return out;
}

using test::error_of;

// Lines longer than the reader's 64 KiB buffer, blank lines, CR before LF, and a last line without a newline.
std::string awkward_text() {
  return "first\n\n" + std::string(200000, 'x') + "\r\nshort\n" + std::string(70000, 'y') + "\nno newline at the end";
}

TEST(TextLines, PlainAndGzipGiveTheSameLines) {
  const fs::path dir = test::fresh_test_dir();
  const std::string text = awkward_text();
  write(dir / "plain.jsonl", text);
  write(dir / "packed.jsonl.gz", gzip(text));
  write(dir / "packed-without-suffix", gzip(text));
  uint64_t plain_bytes = 0, gz_bytes = 0;
  bool plain_gz = true, gz_gz = false;
  const std::vector<Line> plain = lines_of(dir / "plain.jsonl", &plain_bytes, &plain_gz);
  ASSERT_EQ(plain.size(), 6u);
  EXPECT_EQ(plain[0], Line("first", 1, true));
  EXPECT_EQ(plain[1], Line("", 2, true));
  EXPECT_EQ(plain[2], Line(std::string(200000, 'x') + "\r", 3, true));
  EXPECT_EQ(plain[4], Line(std::string(70000, 'y'), 5, true));
  EXPECT_EQ(plain[5], Line("no newline at the end", 6, false));
  EXPECT_EQ(plain_bytes, text.size());
  EXPECT_FALSE(plain_gz);
  EXPECT_EQ(lines_of(dir / "packed.jsonl.gz", &gz_bytes, &gz_gz), plain);
  EXPECT_EQ(gz_bytes, text.size());
  EXPECT_TRUE(gz_gz);
  EXPECT_EQ(lines_of(dir / "packed-without-suffix"), plain);  // told by the magic bytes, not the name
  EXPECT_EQ(read_text_file((dir / "packed.jsonl.gz").string()), text);
  EXPECT_EQ(read_text_file((dir / "plain.jsonl").string()), text);

  write(dir / "empty", "");
  EXPECT_TRUE(lines_of(dir / "empty").empty());
  write(dir / "newline", "\n");
  EXPECT_EQ(lines_of(dir / "newline"), std::vector<Line>{Line("", 1, true)});
}

// A copy cut anywhere (mid-stream, in the trailer, one byte short) is refused naming the file, never read as a
// shorter one; a damaged CRC is refused too.
TEST(TextLines, TruncatedOrDamagedGzipIsRefused) {
  const fs::path dir = test::fresh_test_dir();
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "{\"id\": " + std::to_string(i) + ", \"text\": \"line " + std::to_string(i * 7919) + "\"}\n";
  const std::string whole = gzip(text);
  for (size_t cut : {whole.size() / 2, whole.size() - 8, whole.size() - 4, whole.size() - 1}) {
    const fs::path cut_path = dir / "cut.jsonl.gz";
    write(cut_path, whole.substr(0, cut));
    size_t lines_before = 0;
    const std::string message = error_of([&] {
      TextLines lines(cut_path.string());
      std::string line;
      while (lines.next(line)) lines_before = lines.line_number();
    });
    EXPECT_THAT(message, HasSubstr(cut_path.string() + ": the gzip stream ends early")) << cut;
    if (cut >= whole.size() - 8) {
      EXPECT_EQ(lines_before, 2000u) << cut;  // every line came before the trailer
    }
    EXPECT_THAT(error_of([&] { read_text_file(cut_path.string()); }), HasSubstr("ends early")) << cut;
  }
  std::string bad_crc = whole;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  write(dir / "crc.jsonl.gz", bad_crc);
  EXPECT_THAT(error_of([&] { lines_of(dir / "crc.jsonl.gz"); }), HasSubstr("crc.jsonl.gz: read failed"));
  EXPECT_THAT(error_of([&] { lines_of(dir / "missing.gz"); }), HasSubstr("missing.gz"));
  EXPECT_THAT(error_of([&] { lines_of(dir); }), HasSubstr("a folder"));
}

TEST(TextLines, GzipCorpusReadsAsThePlainOne) {
  const fs::path dir = test::fresh_test_dir();
  const std::string text =
      "\xEF\xBB\xBF{\"id\": 1, \"title\": \"One\", \"text\": \"first document\"}\n\n"
      "{\"id\": \"two\", \"text\": \"second\"}\n{\"id\": 3, \"text\": \" \"}\n{\"id\": 4, \"text\": \"last\"}";
  write(dir / "corpus.jsonl", text);
  write(dir / "corpus.jsonl.gz", gzip(text));
  const Corpus plain = read_corpus((dir / "corpus.jsonl").string());
  const Corpus packed = read_corpus((dir / "corpus.jsonl.gz").string());
  ASSERT_EQ(packed.documents.size(), 3u);
  ASSERT_EQ(packed.documents.size(), plain.documents.size());
  for (size_t i = 0; i < plain.documents.size(); ++i) {
    EXPECT_EQ(packed.documents[i].id, plain.documents[i].id);
    EXPECT_EQ(packed.documents[i].title, plain.documents[i].title);
    EXPECT_EQ(packed.documents[i].text, plain.documents[i].text);
  }
  EXPECT_EQ(packed.skipped_empty, 1u);
  EXPECT_EQ(packed.content_hash, plain.content_hash);  // a compressed copy is the same corpus to a rerun

  // Problems name the decompressed line.
  write(dir / "bad.jsonl.gz", gzip("{\"id\": 1, \"text\": \"a\"}\n\n{\"id\": 2}\n"));
  EXPECT_THAT(error_of([&] { read_corpus((dir / "bad.jsonl.gz").string()); }),
              HasSubstr("bad.jsonl.gz:3: missing field 'text'"));
  // A truncated copy is one error naming the file, not a parse error per line.
  const std::string whole = gzip(text);
  write(dir / "cut.jsonl.gz", whole.substr(0, whole.size() - 3));
  const std::string message = error_of([&] { read_corpus((dir / "cut.jsonl.gz").string()); });
  EXPECT_THAT(message, HasSubstr("cut.jsonl.gz: the gzip stream ends early"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("invalid JSON")));
}

}  // namespace
}  // namespace kvf
