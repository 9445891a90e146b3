// io/file_roles: outputs replace only a regular file or nothing, follow symlinks to their target, and are never an
// input (docs/safety.md, rule 3).
#include "io/file_roles.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "support/temp_dir.h"
#include "support/test_values.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using test::error_of;

TEST(FileRoles, OutputRefusesDevicesFifosAndFolders) {
  const fs::path dir = test::fresh_test_dir();
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { output_target("/dev/null", {}, "--out"); }).find("is a character device"),
            std::string::npos);
  EXPECT_NE(error_of([&] { output_target((dir / "fifo").string(), {}, "--out"); }).find("is a FIFO"),
            std::string::npos);
  EXPECT_NE(error_of([&] { output_target(dir.string(), {}, "--out"); }).find("is a folder"), std::string::npos);
  EXPECT_NE(error_of([&] { output_target((dir / "no/such/out.jsonl").string(), {}, "--out"); })
                .find("does not exist"),
            std::string::npos);
  // A symlink to a device is refused for what it points to.
  fs::create_symlink("/dev/null", dir / "to_null");
  EXPECT_NE(error_of([&] { output_target((dir / "to_null").string(), {}, "--out"); })
                .find("a symlink to /dev/null) is a character device"),
            std::string::npos);
}

TEST(FileRoles, OutputIsNeverAnInput) {
  const fs::path dir = test::fresh_test_dir();
  write(dir / "q.jsonl", "questions");
  fs::create_symlink("q.jsonl", dir / "link");
  fs::create_hard_link(dir / "q.jsonl", dir / "hard");
  for (const char* name : {"q.jsonl", "link", "hard"})
    EXPECT_NE(error_of([&] { output_target((dir / name).string(), {(dir / "q.jsonl").string()}, "--out"); })
                  .find("is the input"),
              std::string::npos)
        << name;
  EXPECT_EQ(read(dir / "q.jsonl"), "questions");
}

TEST(FileRoles, OutputThroughASymlinkReplacesItsTarget) {
  const fs::path dir = test::fresh_test_dir();
  fs::create_directories(dir / "real");
  write(dir / "real/answers.jsonl", "old");
  fs::create_symlink("real/answers.jsonl", dir / "answers.jsonl");
  write_output_file((dir / "answers.jsonl").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir / "answers.jsonl"));  // the link stays a link
  EXPECT_EQ(read(dir / "real/answers.jsonl"), "new");   // and its target holds the new text
  EXPECT_FALSE(fs::exists(dir / "real/answers.jsonl.partial"));
  // A dangling link names the file to create.
  fs::create_symlink("real/new.jsonl", dir / "dangling");
  write_output_file((dir / "dangling").string(), "made");
  EXPECT_EQ(read(dir / "real/new.jsonl"), "made");
}

TEST(FileRoles, ReplaceChecksTheTargetAgain) {
  const fs::path dir = test::fresh_test_dir();
  write(dir / "out.partial", "results");
  fs::create_directories(dir / "out");  // became a folder while the results were written
  EXPECT_NE(error_of([&] { replace_output((dir / "out.partial").string(), (dir / "out").string()); })
                .find("the results stay in"),
            std::string::npos);
  EXPECT_EQ(read(dir / "out.partial"), "results");
}

}  // namespace
}  // namespace kvf
