// The manifest is not trusted as a path list: paths must stay inside the store (no absolute paths, no "..", no
// symlink leading out) and name regular files (a FIFO is refused by stat, never opened, so nothing hangs); data
// files the manifest does not list are reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "prep/store_report.h"
#include "store/manifest.h"
#include "support/temp_dir.h"
#include "support/test_values.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using test::error_of;

// A store whose manifest lists `path` (its record's size and hash do not matter here).
fs::path store_listing(const std::string& path) {
  const fs::path dir = test::fresh_test_dir() / "store";
  fs::create_directories(dir / "kv");
  Manifest m;
  m.record_file({path, 1, 2});
  save_manifest(dir.string(), m);
  return dir;
}

TEST(StorePaths, ManifestPathsMustStayInTheStore) {
  for (const std::string bad : {"/etc/passwd", "../../../../etc/passwd", "kv/../../x.h5", "kv//a.h5", "./chunks.h5",
                                ""}) {
    SCOPED_TRACE(bad);
    const fs::path dir = store_listing(bad);
    const std::string message = error_of([&] { load_manifest(dir.string()); });
    EXPECT_THAT(message, HasSubstr("manifest.json: field 'files[0].path' is '" + bad + "'"));
  }
  EXPECT_NO_THROW(load_manifest(store_listing("kv/independent-00000.h5").string()));
}

TEST(StorePaths, SymlinksLeadingOutAndFifosAreRefusedWithoutHanging) {
  const fs::path dir = store_listing("kv/fifo.h5");
  const fs::path outside = dir.parent_path() / "outside.h5";
  std::ofstream(outside) << "secret";
  fs::create_symlink(outside, dir / "kv" / "out.h5");
  std::ofstream(dir / "kv" / "real.h5") << "data";
  fs::create_symlink("real.h5", dir / "kv" / "in.h5");
  ASSERT_EQ(::mkfifo((dir / "kv" / "fifo.h5").c_str(), 0644), 0);

  EXPECT_THAT(error_of([&] { store_file_path(dir.string(), "kv/out.h5"); }), HasSubstr("leads out of the store"));
  EXPECT_THAT(error_of([&] { describe_file(dir.string(), "kv/fifo.h5"); }),
              HasSubstr("kv/fifo.h5: not a regular file"));
  EXPECT_EQ(describe_file(dir.string(), "kv/in.h5").bytes, 4u);  // a symlink inside the store is fine
  // verify names the FIFO the manifest lists and returns (it used to block opening it).
  const std::vector<StoreProblem> problems = verify_store(dir.string());
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].file, "kv/fifo.h5");
  EXPECT_THAT(problems[0].what, HasSubstr("not a regular file"));
}

TEST(StorePaths, VerifyListsDataFilesTheManifestDoesNot) {
  const fs::path dir = store_listing("kv/independent-00000.h5");
  for (const char* name : {"kv/independent-00000.h5", "kv/independent-00001.h5", "kv/independent-00002.h5.77.tmp",
                           "neighbors.h5", "index.faiss", "kvprep.lock", "eval-pipeline.yaml"})
    std::ofstream(dir / name) << "x";
  EXPECT_THAT(unlisted_store_files(dir.string()),
              ElementsAre("index.faiss", "kv/independent-00001.h5", "neighbors.h5"));
}

}  // namespace
}  // namespace kvf
