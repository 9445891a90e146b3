// What a store writer may touch and what verify may condemn: a writer refuses a folder that is no store (it used
// to delete every *.tmp in it), removes only its own kind of temporaries of writers that are gone, `verify` tells
// an unreadable file from a damaged one and `--repair` drops only damaged ones (it used to delete a healthy shard
// it could not open), and no KV writer commits a value that is not finite (f16 and bf16 used to).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "io/durable_file.h"
#include "prep/shard_sink.h"
#include "prep/store_repair.h"
#include "prep/store_report.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/kv_shard.h"
#include "store/manifest.h"
#include "store/store_lock.h"
#include "support/temp_dir.h"
#include "support/test_values.h"
#include "support/tiny_shard.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using test::error_of;

constexpr uint64_t kFingerprint = 0x0123456789abcdefULL;

void touch(const fs::path& p, const std::string& text = "user data") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A pid no process has: a child that has exited and been reaped.
long gone_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

TEST(StoreFolder, AWriterRefusesAFolderThatIsNoStoreAndTouchesNothing) {
  const fs::path dir = test::fresh_test_dir() / "home";
  const std::vector<fs::path> files = {dir / "notes.txt", dir / "draft.tmp", dir / "kv" / "mine.tmp",
                                       dir / "report.pdf.1.tmp"};
  for (const fs::path& f : files) touch(f);
  for (const bool create : {false, true}) {  // every stage, and chunk (which creates a missing store)
    const std::string message = error_of([&] { StoreLock::acquire(dir.string(), false, create); });
    EXPECT_THAT(message, HasSubstr("store " + dir.string() + ": the folder is not a kvfuse store"));
    // kv/ is a store's own folder: what is in it stays too.
    EXPECT_THAT(message, HasSubstr("holds 3 other entries (draft.tmp, notes.txt, report.pdf.1.tmp)"));
  }
  for (const fs::path& f : files) EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_FALSE(fs::exists(dir / kStoreLockFile));
}

TEST(StoreFolder, StoresEmptyFoldersAndStoresUnderConstructionAreWritten) {
  const fs::path root = test::fresh_test_dir();
  fs::create_directories(root / "empty");
  EXPECT_TRUE(StoreLock::acquire((root / "empty").string(), false).held());
  EXPECT_TRUE(StoreLock::acquire((root / "missing").string(), false, true).held());
  touch(root / "begun" / kStoreLockFile, "");  // a first chunk run killed before its first commit
  touch(root / "begun" / "notes.txt");
  EXPECT_TRUE(StoreLock::acquire((root / "begun").string(), false).held());
  touch(root / "store" / kManifestFile, "{}");
  touch(root / "store" / "README");
  EXPECT_TRUE(StoreLock::acquire((root / "store").string(), false).held());
  // What kvrun eval --build-store writes before its pipeline takes the lock.
  touch(root / "eval" / "corpus.jsonl");
  touch(root / "eval" / "eval-pipeline.yaml");
  EXPECT_TRUE(StoreLock::acquire((root / "eval").string(), false, true).held());
}

TEST(StoreFolder, OnlyTemporariesOfKvfuseFilesWhoseWriterIsGoneAreRemoved) {
  const fs::path dir = test::fresh_test_dir() / "store";
  touch(dir / kManifestFile, "{}");
  const std::string gone = std::to_string(gone_pid()), live = std::to_string(::getppid());
  const std::vector<std::string> removed = {"chunks.h5." + gone + ".tmp", "manifest.json." + gone + ".tmp",
                                            "kv/independent-00003.h5." + gone + ".tmp",
                                            "kv/sim-a25-int8-00000.h5." + gone + ".tmp"};
  const std::vector<std::string> kept = {
      "notes.tmp", "kv/notes.tmp", "chunks.h5.tmp", "chunks.h5.x1.tmp", "report.txt." + gone + ".tmp",
      "kv/independent-00003.h5.tmp", "kv/notes.h5." + gone + ".tmp", "index.faiss." + live + ".tmp",
      "chunks.h5." + std::to_string(::getpid()) + ".tmp"};
  for (const std::string& f : removed) touch(dir / f);
  for (const std::string& f : kept) touch(dir / f);
  const StoreLock lock = StoreLock::acquire(dir.string(), false);
  for (const std::string& f : removed) EXPECT_FALSE(fs::exists(dir / f)) << f;
  for (const std::string& f : kept) EXPECT_TRUE(fs::exists(dir / f)) << f;
}

TEST(StoreFolder, TemporaryNamesAreExactlyKvfusesOwn) {
  const std::optional<TempName> t = parse_temp_name("chunks.h5.4242.tmp");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->final_name, "chunks.h5");
  EXPECT_EQ(t->pid, 4242);
  for (const char* other : {"notes.tmp", ".tmp", "a.tmp", ".42.tmp", "a..tmp", "a.4x2.tmp", "a.0.tmp", "a.42.tmpx",
                            "a.42.TMP", "d/a.42.tmp", "a.1234567890123456789.tmp"})
    EXPECT_FALSE(is_temp_name(other)) << other;
  EXPECT_TRUE(is_store_temporary("kv/similarity-00012.h5.77.tmp"));
  EXPECT_TRUE(is_store_temporary("neighbors.h5.77.tmp"));
  EXPECT_FALSE(is_store_temporary("kv/neighbors.h5.77.tmp"));
  EXPECT_FALSE(is_store_temporary("photo.jpg.77.tmp"));
}

// ---- verify and repair: unreadable is not damaged ----

KvShardLayout tiny_layout(KvDtype dtype = KvDtype::F16) {
  return test::tiny_shard_layout("independent", kFingerprint, 2, 1, 4, dtype);
}

// A sound store: a chunk table of two chunks and one independent shard of each, committed with stage records.
fs::path sound_store() {
  const fs::path dir = test::fresh_test_dir() / "store";
  fs::create_directories(dir / "kv");
  Manifest m;
  m.model_fingerprint = kFingerprint;
  m.model_name = "tiny.gguf";
  ChunkTable table(kFingerprint);
  for (int c = 0; c < 2; ++c) table.add({0, "doc" + std::to_string(c), "", "text", 0, {c + 1, c + 2, c + 3}});
  table.write((dir / kChunksFile).string());
  m.record_file(describe_file(dir.string(), kChunksFile));
  m.record_stage({"chunk", utc_timestamp(), 1, {{"chunks", 2}}});
  for (size_t c = 0; c < table.size(); ++c) {
    KvShardWriter w(tiny_layout());
    const std::vector<float> k(3 * 8, 0.5f), v(3 * 8, -0.25f);
    w.add_chunk(table.chunks()[c].id, k.data(), v.data(), test::iota_positions(3).data(), 3);
    w.write((dir / kv_shard_name("independent", c)).string());
    m.record_file(describe_file(dir.string(), kv_shard_name("independent", c)));
  }
  m.record_stage({"prefill-independent", utc_timestamp(), 1, {{"chunks", 2}}});
  save_manifest(dir.string(), m);
  EXPECT_TRUE(verify_store(dir.string()).empty());
  return dir;
}

// While alive, this thread reads files as their permissions say even as root: it drops CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH from its effective set (capabilities are per thread) and restores them on destruction.
class FilePermissionsApply {
 public:
  FilePermissionsApply() {
    if (::geteuid() != 0) return;
    header_ = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (::syscall(SYS_capget, &header_, data_) != 0) return;
    __user_cap_data_struct lowered[2] = {data_[0], data_[1]};
    lowered[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    dropped_ = ::syscall(SYS_capset, &header_, lowered) == 0;
  }
  ~FilePermissionsApply() {
    if (dropped_) ::syscall(SYS_capset, &header_, data_);
  }
  bool ok() const { return ::geteuid() != 0 || dropped_; }

 private:
  __user_cap_header_struct header_{};
  __user_cap_data_struct data_[2]{};
  bool dropped_ = false;
};

TEST(StoreVerify, AnUnreadableShardIsReportedAsSuchAndRepairKeepsIt) {
  const fs::path dir = sound_store();
  const fs::path shard = dir / kv_shard_name("independent", 1);
  const uint64_t bytes = fs::file_size(shard);
  fs::permissions(shard, fs::perms::none);
  std::vector<StoreProblem> problems;
  RepairResult repaired;
  {
    const FilePermissionsApply as_permissions_say;
    ASSERT_TRUE(as_permissions_say.ok()) << "cannot drop CAP_DAC_OVERRIDE to test permission denied as root";
    problems = verify_store(dir.string());
    repaired = repair_store(dir.string());
  }
  fs::permissions(shard, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].file, kv_shard_name("independent", 1));
  EXPECT_EQ(problems[0].kind, ProblemKind::Unreadable);
  EXPECT_THAT(problems[0].what, HasSubstr("independent-00001.h5: cannot open: Permission denied"));
  EXPECT_TRUE(repaired.dropped.empty());
  ASSERT_EQ(repaired.unreadable.size(), 1u);
  // The shard, its record and its stage's record are all still there, and the store verifies once readable.
  ASSERT_TRUE(fs::exists(shard));
  EXPECT_EQ(fs::file_size(shard), bytes);
  const Manifest m = load_manifest(dir.string());
  EXPECT_TRUE(m.find_stage("prefill-independent"));
  EXPECT_EQ(m.files.size(), 3u);
  EXPECT_TRUE(verify_store(dir.string()).empty());
}

TEST(StoreVerify, AnUnreadableChunkTableIsNotBlamedByTheTableChecks) {
  const fs::path dir = sound_store();
  fs::permissions(dir / kChunksFile, fs::perms::none);
  std::vector<StoreProblem> problems;
  {
    const FilePermissionsApply as_permissions_say;
    ASSERT_TRUE(as_permissions_say.ok());
    problems = verify_store(dir.string());
  }
  fs::permissions(dir / kChunksFile, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_FALSE(problems.empty());
  for (const StoreProblem& p : problems) EXPECT_EQ(p.kind, ProblemKind::Unreadable) << p.what;
}

TEST(StoreVerify, ADamagedShardIsDroppedAndAMissingOneIsDamage) {
  const fs::path dir = sound_store();
  const fs::path shard = dir / kv_shard_name("independent", 0);
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((std::streamoff)fs::file_size(shard) / 2);
    f.put('\x5a');
  }
  fs::remove(dir / kv_shard_name("independent", 1));
  const std::vector<StoreProblem> problems = verify_store(dir.string());
  ASSERT_GE(problems.size(), 2u);
  for (const StoreProblem& p : problems) EXPECT_EQ(p.kind, ProblemKind::Damaged) << p.what;
  EXPECT_STREQ(problem_kind_name(problems[0].kind), "damaged");
  const RepairResult r = repair_store(dir.string());
  EXPECT_EQ(r.dropped.size(), 2u);
  EXPECT_TRUE(r.unreadable.empty());
  EXPECT_FALSE(fs::exists(shard));
  EXPECT_TRUE(verify_store(dir.string()).empty());
}

// ---- no KV writer commits a value that is not finite ----

TEST(KvWriters, EveryDtypeRefusesValuesThatAreNotFiniteNamingTheChunkAndLayer) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const KvDtype dtype : {KvDtype::F16, KvDtype::BF16, KvDtype::Int8, KvDtype::Int4}) {
    for (const float bad : {nan, inf, -inf}) {
      SCOPED_TRACE(std::string(kv_dtype_name(dtype)) + " " + std::to_string(bad));
      KvShardLayout layout = tiny_layout(dtype);
      if (layout.low_bit()) layout.quant_group = 4;
      KvShardWriter w(layout);
      std::vector<float> k(3 * 8, 0.5f), v(3 * 8, 0.25f);
      v[2 * 8 + 1 * 4 + 3] = bad;  // row 2, stored layer 1, head 0
      const std::string message =
          error_of([&] { w.add_chunk(0xabc, k.data(), v.data(), test::iota_positions(3).data(), 3); });
      EXPECT_THAT(message, HasSubstr("chunk 0000000000000abc: v at row 2, stored layer 1, kv head 0 is"));
      EXPECT_THAT(message, HasSubstr("stored KV must be finite"));
      EXPECT_EQ(w.chunks(), 0u);
      EXPECT_EQ(w.bytes(), 0u);  // nothing of the refused chunk is kept
    }
  }
}

TEST(KvWriters, F16RefusesValuesBeyondItsRangeAndBf16HoldsThem) {
  std::vector<float> k(3 * 8, 0.5f), v(3 * 8, 0.25f);
  k[5] = 70000.0f;  // finite in f32 and bf16, infinity in f16
  KvShardWriter f16(tiny_layout(KvDtype::F16));
  EXPECT_THAT(error_of([&] { f16.add_chunk(1, k.data(), v.data(), test::iota_positions(3).data(), 3); }),
              HasSubstr("k at row 0, stored layer 1, kv head 0 is 70000, beyond f16's range"));
  EXPECT_EQ(f16.bytes(), 0u);
  KvShardWriter bf16(tiny_layout(KvDtype::BF16));
  EXPECT_NO_THROW(bf16.add_chunk(1, k.data(), v.data(), test::iota_positions(3).data(), 3));
}

TEST(KvWriters, TheShardSinkNamesTheModelAndCommitsNothing) {
  const fs::path dir = test::fresh_test_dir() / "store";
  fs::create_directories(dir);
  Manifest m;
  m.model_fingerprint = kFingerprint;
  m.model_name = "nan-weights.gguf";
  save_manifest(dir.string(), m);
  ShardSink sink(dir.string(), m, tiny_layout(), 1);
  HostKv kv;
  kv.rows = 3;
  kv.layers = 2;
  kv.width = 4;
  kv.k.assign(3 * 8, std::numeric_limits<float>::quiet_NaN());
  kv.v.assign(3 * 8, 1.0f);
  kv.positions = test::iota_positions(3);
  const std::string message = error_of([&] { sink.add(0x77, kv); });
  EXPECT_THAT(message, HasSubstr("independent KV of model nan-weights.gguf (fingerprint 0123456789abcdef)"));
  EXPECT_THAT(message, HasSubstr("chunk 0000000000000077: k at row 0, stored layer 0, kv head 0 is nan"));
  sink.flush();
  EXPECT_TRUE(load_manifest(dir.string()).files.empty());
  EXPECT_FALSE(fs::exists(dir / "kv"));
}

}  // namespace
}  // namespace kvf
