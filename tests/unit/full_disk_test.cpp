// A full disk while writing a store file (simulated with RLIMIT_FSIZE: writes past the limit fail with EFBIG, as
// ENOSPC would): the write throws naming the file, leaves no temporary, and the final name keeps what it held.
// The limit is set both mid-file (the failure hits a write call) and just short of the end (it hits only the
// flush at close, which FAISS and HDF5 handles closed in destructors never reported).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <random>

#include "retrieval/vector_index.h"
#include "store/kv_shard.h"
#include "support/temp_dir.h"
#include "support/test_values.h"
#include "support/tiny_shard.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

// Limits the size of every file this process writes while it lives.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(uint64_t bytes) {
    std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG instead of killing us
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() { setrlimit(RLIMIT_FSIZE, &old_); }

 private:
  rlimit old_{};
};

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<float> random_values(size_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Writes `write(path)` once freely to learn its size, then under limits that cut it mid-file and at its very end:
// each must throw naming the file and leave the directory, and the committed file, as they were.
template <typename Write>
void expect_full_disk_is_an_error(const fs::path& dir, const std::string& name, Write write) {
  const fs::path whole = dir / ("whole-" + name);
  write(whole.string());
  const uint64_t size = fs::file_size(whole);
  const fs::path target = dir / name;
  fs::copy_file(whole, target);  // the committed file the failed rewrite must leave alone
  for (const uint64_t limit : {size / 2, size - 16}) {
    SCOPED_TRACE("limit " + std::to_string(limit) + " of " + std::to_string(size) + " bytes");
    const std::vector<std::string> before = names_in(dir);
    std::string message;
    {
      const FileSizeLimit full(limit);
      message = error_of([&] { write(target.string()); });
    }
    EXPECT_THAT(message, HasSubstr(target.string()));
    EXPECT_EQ(names_in(dir), before);  // no temporary left
    EXPECT_EQ(fs::file_size(target), size);  // nothing truncated renamed into place
  }
}

TEST(FullDisk, FaissIndexWriteFailsCleanly) {
  const fs::path dir = test::fresh_test_dir();
  const int dim = 32;
  const std::vector<float> vectors = random_values(600 * dim);
  const VectorIndex index = VectorIndex::build(vectors.data(), 600, dim, IndexSpec{});
  expect_full_disk_is_an_error(dir, "index.faiss", [&](const std::string& path) { index.save(path); });
}

TEST(FullDisk, KvShardWriteFailsCleanly) {
  const fs::path dir = test::fresh_test_dir();
  const KvShardLayout l = test::tiny_shard_layout("independent", 1, 2, 2, 16);
  KvShardWriter w(l);
  const std::vector<float> k = random_values(300 * l.row_elems()), v = random_values(k.size());
  std::vector<int32_t> positions(300);
  for (int32_t i = 0; i < 300; ++i) positions[i] = i;
  w.add_chunk(42, k.data(), v.data(), positions.data(), 300);
  expect_full_disk_is_an_error(dir, "independent-00000.h5", [&](const std::string& path) { w.write(path); });
}

}  // namespace
}  // namespace kvf
