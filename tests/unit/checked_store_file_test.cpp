// Whole tables a query reads (chunks.h5, index.faiss) are trusted only once their size and XXH3 are the manifest's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/hex.h"
#include "store/manifest.h"
#include "support/temp_dir.h"
#include "support/test_values.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

TEST(CheckedStoreFile, AcceptsTheCommittedFileAndRefusesAnyOther) {
  const fs::path dir = test::fresh_test_dir();
  std::ofstream(dir / "chunks.h5") << "committed table";
  Manifest m;
  m.record_file(describe_file(dir.string(), "chunks.h5"));
  EXPECT_EQ(checked_store_file(dir.string(), m, "chunks.h5"), (dir / "chunks.h5").string());

  std::ofstream(dir / "chunks.h5") << "committed tablE";  // same size, one byte changed
  const std::string message = error_of([&] { checked_store_file(dir.string(), m, "chunks.h5"); });
  EXPECT_THAT(message, HasSubstr((dir / "chunks.h5").string() + ": damaged: 15 bytes with xxh3 "));
  EXPECT_THAT(message, HasSubstr("the manifest records 15 bytes with xxh3 " + hex64(m.files[0].xxh3)));
  EXPECT_THAT(message, HasSubstr("kvprep verify --repair"));

  EXPECT_THAT(error_of([&] { checked_store_file(dir.string(), m, "index.faiss"); }),
              HasSubstr("index.faiss: not committed in the store's manifest"));
}

TEST(CheckedStoreFile, AcceptsTheReplacedVersionMidReplacement) {
  const fs::path dir = test::fresh_test_dir();
  std::ofstream(dir / "index.faiss") << "old index";
  CommittedFile f = describe_file(dir.string(), "index.faiss");
  f.replacing = true;
  f.previous_bytes = f.bytes;
  f.previous_xxh3 = f.xxh3;
  f.bytes = 99;
  f.xxh3 = 1;
  Manifest m;
  m.record_file(f);
  EXPECT_NO_THROW(checked_store_file(dir.string(), m, "index.faiss"));
}

}  // namespace
}  // namespace kvf
