// fusion/query_file: a question file is read whole or refused: a gzip stream cut short, two questions with one
// id, and chunk lists that would be silently reinterpreted are errors naming the file and line.
#include "fusion/query_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "support/temp_dir.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

std::string questions(int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += "{\"id\": \"q" + std::to_string(i) + "\", \"question\": \"What is item " + std::to_string(i) +
            "? " + std::string(200, 'x') + "\", \"answers\": [\"" + std::to_string(i) + "\"]}\n";
  return text;
}

void write_gzip(const fs::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), (unsigned)text.size()), (int)text.size());
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::string error_of(const std::string& path) {
  try {
    read_query_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

TEST(QueryFile, WholeGzipIsRead) {
  const fs::path dir = test::fresh_test_dir();
  write_gzip(dir / "q.jsonl.gz", questions(10));
  EXPECT_EQ(read_query_file((dir / "q.jsonl.gz").string()).size(), 10u);
}

// A copy cut anywhere before its end (mid-stream, or just the 8-byte CRC and length trailer missing) is refused,
// never read as a shorter file.
TEST(QueryFile, TruncatedGzipIsRefused) {
  const fs::path dir = test::fresh_test_dir();
  write_gzip(dir / "whole.gz", questions(10));
  std::ifstream in(dir / "whole.gz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut : {bytes.size() / 2, bytes.size() - 8, bytes.size() - 1}) {
    write(dir / "cut.jsonl.gz", bytes.substr(0, cut));
    EXPECT_NE(error_of((dir / "cut.jsonl.gz").string()).find("ends early"), std::string::npos) << cut;
  }
  std::string bad_crc = bytes;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  write(dir / "crc.jsonl.gz", bad_crc);
  EXPECT_NE(error_of((dir / "crc.jsonl.gz").string()).find("crc.jsonl.gz: read failed"), std::string::npos);
}

TEST(QueryFile, DuplicateIdsAreRefused) {
  const fs::path dir = test::fresh_test_dir();
  write(dir / "q.jsonl", "{\"id\": \"a\", \"question\": \"x?\"}\n{\"id\": \"b\", \"question\": \"y?\"}\n"
                         "{\"id\": \"a\", \"question\": \"z?\"}\n");
  EXPECT_NE(error_of((dir / "q.jsonl").string()).find("q.jsonl:3: id 'a' is also the id of line 1"),
            std::string::npos);
  // A number id and the same digits as a string are one id.
  write(dir / "n.jsonl", "{\"id\": 7, \"question\": \"x?\"}\n{\"id\": \"7\", \"question\": \"y?\"}\n");
  EXPECT_NE(error_of((dir / "n.jsonl").string()).find("n.jsonl:2: id '7'"), std::string::npos);
}

TEST(QueryFile, AmbiguousChunkListsAreRefused) {
  const fs::path dir = test::fresh_test_dir();
  const std::pair<const char*, const char*> cases[] = {
      {"{\"question\": \"x?\", \"chunk_ids\": []}", "\"chunk_ids\" is empty"},
      {"{\"question\": \"x?\", \"contexts\": []}", "\"contexts\" is empty"},
      {"{\"question\": \"x?\", \"chunk_ids\": [\"0123456789abcdef\"], \"contexts\": [{\"text\": \"t\"}]}",
       "give \"chunk_ids\" or \"contexts\", not both"},
      {"{\"question\": \"x?\", \"contexts\": [{\"title\": \"A\", \"text\": \"t\"}, {\"title\": \"B\", \"text\": \" \"}]}",
       "\"contexts\"[1].text is only whitespace"},
  };
  for (const auto& [line, message] : cases) {
    write(dir / "q.jsonl", std::string(line) + "\n");
    EXPECT_NE(error_of((dir / "q.jsonl").string()).find(std::string("q.jsonl:1: ") + message), std::string::npos)
        << line << " -> " << error_of((dir / "q.jsonl").string());
  }
}

TEST(QueryFile, FifoIsRefusedWithoutOpening) {
  const fs::path dir = test::fresh_test_dir();
  ASSERT_EQ(::mkfifo((dir / "q.jsonl").c_str(), 0600), 0);
  EXPECT_NE(error_of((dir / "q.jsonl").string()).find("is a FIFO"), std::string::npos);
}

}  // namespace
}  // namespace kvf
