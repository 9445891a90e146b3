// One writer per store (store/store_lock.h): a second lock fails at once naming the holder, or waits with
// `wait`; released locks are free again; stale temporaries go once the lock is held; temporaries carry the pid.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/durable_file.h"
#include "store/store_lock.h"
#include "support/temp_dir.h"
#include "support/test_values.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

TEST(StoreLock, SecondWriterFailsNamingTheHolder) {
  const fs::path dir = test::fresh_test_dir();
  std::optional<StoreLock> first(StoreLock::acquire(dir.string(), false));
  ASSERT_TRUE(first->held());
  // flock belongs to the open file, so a second open in this same process is refused like another process.
  const std::string message = error_of([&] { StoreLock::acquire(dir.string(), false); });
  EXPECT_THAT(message, HasSubstr("store " + dir.string() + " is being written by another kvprep"));
  EXPECT_THAT(message, HasSubstr("pid " + std::to_string(::getpid()) + " on host "));
  EXPECT_THAT(message, HasSubstr("kvf_unit_tests"));  // the holder's command line
  EXPECT_THAT(message, HasSubstr("--wait-lock"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
  first.reset();
  EXPECT_TRUE(StoreLock::acquire(dir.string(), false).held());
}

TEST(StoreLock, WaitingWriterGetsTheLockWhenTheHolderEnds) {
  const fs::path dir = test::fresh_test_dir();
  std::optional<StoreLock> first(StoreLock::acquire(dir.string(), false));
  std::atomic<bool> got{false};
  std::thread second([&] {
    const StoreLock lock = StoreLock::acquire(dir.string(), true);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(got);
  first.reset();
  second.join();
  EXPECT_TRUE(got);
}

TEST(StoreLock, MissingStoreIsCreatedOnlyWhenAsked) {
  const fs::path dir = test::fresh_test_dir() / "new";
  EXPECT_FALSE(StoreLock::acquire(dir.string(), false).held());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(StoreLock::acquire(dir.string(), false, true).held());
  EXPECT_TRUE(fs::exists(dir / kStoreLockFile));
}

TEST(StoreLock, RemovesTemporariesOfKilledWriters) {
  const fs::path dir = test::fresh_test_dir();
  fs::create_directories(dir / "kv");
  const pid_t killed = ::fork();  // a writer that is gone: exited and reaped
  if (killed == 0) ::_exit(0);
  ::waitpid(killed, nullptr, 0);
  const std::string pid = std::to_string(killed);
  std::ofstream(dir / ("index.faiss." + pid + ".tmp")) << "x";
  std::ofstream(dir / "kv" / ("independent-00000.h5." + pid + ".tmp")) << "x";
  std::ofstream(dir / "kv" / "independent-00000.h5") << "kept";
  const StoreLock lock = StoreLock::acquire(dir.string(), false);
  EXPECT_FALSE(fs::exists(dir / ("index.faiss." + pid + ".tmp")));
  EXPECT_FALSE(fs::exists(dir / "kv" / ("independent-00000.h5." + pid + ".tmp")));
  EXPECT_TRUE(fs::exists(dir / "kv" / "independent-00000.h5"));
}

TEST(DurableFile, TemporaryNamesCarryThePid) {
  EXPECT_EQ(temp_path_for("s/kv/a.h5"), "s/kv/a.h5." + std::to_string(::getpid()) + ".tmp");
  EXPECT_TRUE(is_temp_name(fs::path(temp_path_for("s/manifest.json")).filename().string()));
}

}  // namespace
}  // namespace kvf
