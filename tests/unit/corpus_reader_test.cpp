// Corpus input: JSONL records and directories of .txt files, every kind of bad line reported as <file>:<line>.
#include "io/corpus_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

#include "support/temp_dir.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A directory unique to the running test, emptied first.
fs::path test_dir() { return test::fresh_test_dir(); }

std::string write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return path.string();
}

// The message of the kvf::Error that reading `path` throws ("" when it does not).
std::string error_of(const std::string& path) {
  try {
    read_corpus(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CorpusJsonl, ReadsDocumentsInOrder) {
  const std::string path = write_file(test_dir() / "c.jsonl",
                                      "{\"id\": \"a\", \"title\": \"Alpha\", \"text\": \"First text.\"}\n"
                                      "\n"
                                      "{\"id\": 7, \"text\": \"No title.\", \"extra\": [1, 2]}\r\n"
                                      "{\"id\": \"c\", \"title\": null, \"text\": \"Null title. ünï 😀\"}");
  const Corpus c = read_corpus(path);
  ASSERT_EQ(c.documents.size(), 3u);
  EXPECT_EQ(c.documents[0].id, "a");
  EXPECT_EQ(c.documents[0].title, "Alpha");
  EXPECT_EQ(c.documents[0].text, "First text.");
  EXPECT_EQ(c.documents[1].id, "7");
  EXPECT_EQ(c.documents[1].title, "");
  EXPECT_EQ(c.documents[2].text, "Null title. ünï 😀");
  EXPECT_EQ(c.skipped_empty, 0u);
}

TEST(CorpusJsonl, SkipsAndCountsEmptyTexts) {
  const std::string path = write_file(test_dir() / "c.jsonl",
                                      "\xEF\xBB\xBF{\"id\": 1, \"text\": \"\"}\n"
                                      "{\"id\": 2, \"text\": \" \\n\\t \"}\n"
                                      "{\"id\": 3, \"text\": \"kept\"}\n");
  const Corpus c = read_corpus(path);
  ASSERT_EQ(c.documents.size(), 1u);
  EXPECT_EQ(c.documents[0].id, "3");
  EXPECT_EQ(c.skipped_empty, 2u);
}

TEST(CorpusJsonl, ReportsEveryBadLineWithItsNumber) {
  const std::string path = write_file(test_dir() / "bad.jsonl",
                                      "{\"id\": 1, \"text\": \"ok\"}\n"               // 1
                                      "{\"id\": 2, \"text\": \"unterminated}\n"       // 2
                                      "{\"id\": 3}\n"                                 // 3
                                      "{\"id\": 4.5, \"text\": \"x\"}\n"              // 4
                                      "{\"id\": true, \"text\": \"x\"}\n"             // 5
                                      "{\"id\": 6, \"text\": 42}\n"                   // 6
                                      "{\"id\": 7, \"text\": \"x\", \"title\": 3}\n"  // 7
                                      "[1, 2]\n"                                      // 8
                                      "{\"text\": \"no id\"}\n"                       // 9
                                      "{\"id\": \"\", \"text\": \"x\"}\n"             // 10
                                      "{\"id\": 11, \"text\": \"a\\u0000b\"}\n"       // 11
                                      "{\"id\": 1, \"text\": \"again\"}\n");          // 12
  const std::string message = error_of(path);
  EXPECT_THAT(message, HasSubstr("11 problems"));
  EXPECT_THAT(message, HasSubstr(path + ":2: invalid JSON"));
  EXPECT_THAT(message, HasSubstr(path + ":3: missing field 'text'"));
  EXPECT_THAT(message, HasSubstr(path + ":4: field 'id' must be a string or an integer, got number 4.5"));
  EXPECT_THAT(message, HasSubstr(path + ":5: field 'id' must be a string or an integer, got boolean true"));
  EXPECT_THAT(message, HasSubstr(path + ":6: field 'text' must be a string, got number 42"));
  EXPECT_THAT(message, HasSubstr(path + ":7: field 'title' must be a string"));
  EXPECT_THAT(message, HasSubstr(path + ":8: expected a JSON object, got array"));
  EXPECT_THAT(message, HasSubstr(path + ":9: missing field 'id'"));
  EXPECT_THAT(message, HasSubstr(path + ":10: field 'id' is empty"));
  EXPECT_THAT(message, HasSubstr(path + ":11: field 'text' contains a NUL character"));
  EXPECT_THAT(message, HasSubstr(path + ":12: duplicate id '1' (first at line 1)"));
  EXPECT_THAT(message, Not(HasSubstr(path + ":1:")));
}

// A number too large for a double is nlohmann's out_of_range, not its parse_error (found by tests/fuzz): it is one
// more bad line, where it used to escape read_corpus as another exception type.
TEST(CorpusJsonl, NumberTooLargeIsABadLine) {
  const std::string path = write_file(test_dir() / "huge.jsonl", "{\"id\": 1e999, \"text\": \"x\"}\n");
  EXPECT_THAT(error_of(path), HasSubstr(path + ":1: invalid JSON: number overflow parsing '1e999'"));
}

TEST(CorpusJsonl, ShowsTheFirstTwentyProblems) {
  std::string lines;
  for (int i = 0; i < 25; ++i) lines += "not json\n";
  const std::string path = write_file(test_dir() / "bad.jsonl", lines);
  const std::string message = error_of(path);
  EXPECT_THAT(message, HasSubstr("25 problems"));
  EXPECT_THAT(message, HasSubstr(path + ":20: invalid JSON"));
  EXPECT_THAT(message, Not(HasSubstr(path + ":21:")));
  EXPECT_THAT(message, HasSubstr("... and 5 more"));
}

TEST(CorpusJsonl, RejectsInvalidUtf8) {
  const std::string path = write_file(test_dir() / "c.jsonl", "{\"id\": 1, \"text\": \"bad \xC3\x28 byte\"}\n");
  EXPECT_THAT(error_of(path), HasSubstr(path + ":1: invalid JSON"));
}

TEST(CorpusJsonl, EmptyCorpusAndMissingPathAreErrors) {
  const fs::path dir = test_dir();
  EXPECT_THAT(error_of(write_file(dir / "empty.jsonl", "\n\n")), HasSubstr("no document has any text"));
  EXPECT_THAT(error_of(write_file(dir / "blank.jsonl", "{\"id\": 1, \"text\": \"  \"}\n")), HasSubstr("(1 empty)"));
  EXPECT_THAT(error_of((dir / "nowhere.jsonl").string()), HasSubstr("no such file or directory"));
}

TEST(CorpusJsonl, ContentHashFollowsTheBytes) {
  const fs::path dir = test_dir();
  const std::string text = "{\"id\": 1, \"text\": \"one\"}\n";
  const uint64_t a = read_corpus(write_file(dir / "a.jsonl", text)).content_hash;
  EXPECT_EQ(read_corpus(write_file(dir / "b.jsonl", text)).content_hash, a);
  EXPECT_NE(read_corpus(write_file(dir / "c.jsonl", text + "{\"id\": 2, \"text\": \"two\"}\n")).content_hash, a);
}

TEST(CorpusDirectory, ReadsTextFilesSortedByPath) {
  const fs::path dir = test_dir() / "docs";
  write_file(dir / "b.txt", "Bee text.\n");
  write_file(dir / "a" / "z.txt", "Nested text.");
  write_file(dir / "a" / "notes.md", "ignored");
  write_file(dir / "empty.txt", "\n  \n");
  write_file(dir / "bom.txt", "\xEF\xBB\xBFWith a BOM.");
  const Corpus c = read_corpus(dir.string());
  ASSERT_EQ(c.documents.size(), 3u);
  EXPECT_EQ(c.documents[0].id, "a/z.txt");
  EXPECT_EQ(c.documents[0].title, "z");
  EXPECT_EQ(c.documents[0].text, "Nested text.");
  EXPECT_EQ(c.documents[1].id, "b.txt");
  EXPECT_EQ(c.documents[2].id, "bom.txt");
  EXPECT_EQ(c.documents[2].text, "With a BOM.");
  EXPECT_EQ(c.skipped_empty, 1u);
}

TEST(CorpusDirectory, ReportsInvalidUtf8WithFileAndLine) {
  const fs::path dir = test_dir() / "docs";
  write_file(dir / "good.txt", "Fine.");
  const std::string bad = write_file(dir / "bad.txt", "line one\nline two \xFF here\n");
  EXPECT_THAT(error_of(dir.string()), HasSubstr(bad + ":2: invalid UTF-8 at byte 18"));
}

TEST(CorpusDirectory, NeedsTextFiles) {
  const fs::path dir = test_dir() / "docs";
  write_file(dir / "readme.md", "not a text file");
  EXPECT_THAT(error_of(dir.string()), HasSubstr("no .txt files"));
}

TEST(CorpusDirectory, ContentHashSeesRenames) {
  const fs::path dir = test_dir();
  write_file(dir / "one" / "a.txt", "Same text.");
  write_file(dir / "two" / "b.txt", "Same text.");
  write_file(dir / "three" / "a.txt", "Same text.");
  const uint64_t one = read_corpus((dir / "one").string()).content_hash;
  EXPECT_NE(read_corpus((dir / "two").string()).content_hash, one);
  EXPECT_EQ(read_corpus((dir / "three").string()).content_hash, one);
}

}  // namespace
}  // namespace kvf
