// The store's files: manifest round trips and refusals, the chunk table in HDF5 (round trip, appends with
// duplicates, damaged files), and the model fingerprint they all record.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/hex.h"
#include "core/json_file.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/fingerprint.h"
#include "store/chunk_table.h"
#include "store/hdf5_file.h"
#include "io/durable_file.h"
#include "store/manifest.h"
#include "support/test_values.h"

#include "support/temp_dir.h"

namespace kvf {
namespace {

using test::error_of;

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

fs::path test_dir() { return test::fresh_test_dir(); }

// ---- manifest ----

Manifest sample_manifest() {
  Manifest m;
  m.model_fingerprint = 0x0123456789abcdefULL;
  m.tokenizer_hash = 0xfedcba9876543210ULL;
  m.model_name = "model.gguf";
  m.settings["chunking"] = {{"chunk_tokens", 256}, {"max_tokens", 320}, {"rendering_version", 1}};
  m.record_stage({"chunk", "2025-01-31T12:00:00Z", 42, {{"documents", 3}, {"chunks", 5}}});
  m.record_file({"chunks.h5", 1234, 0xabcULL});
  return m;
}

void rewrite_manifest(const fs::path& dir, const std::function<void(json&)>& edit) {
  json j = read_json_file(manifest_path(dir.string()));
  edit(j);
  std::ofstream(manifest_path(dir.string()), std::ios::trunc) << j.dump(2);
}

// A store path the file system refuses (here a name over 255 bytes) is an error that names the store, not a raw
// std::filesystem exception out of the library (found by the pipeline fuzz target).
TEST(Manifest, UnreachableStorePathIsAClearError) {
  const std::string too_long = (test_dir() / std::string(300, 'G')).string();
  const std::string message = error_of([&] { has_manifest(too_long); });
  EXPECT_THAT(message, HasSubstr("cannot look for manifest.json"));
  EXPECT_THAT(message, HasSubstr(std::string(300, 'G')));
}

TEST(Manifest, RoundTrip) {
  const fs::path dir = test_dir();
  EXPECT_FALSE(has_manifest(dir.string()));
  save_manifest(dir.string(), sample_manifest());
  EXPECT_TRUE(has_manifest(dir.string()));
  EXPECT_FALSE(fs::exists(manifest_path(dir.string()) + ".tmp"));
  const Manifest m = load_manifest(dir.string());
  EXPECT_EQ(m.model_fingerprint, 0x0123456789abcdefULL);
  EXPECT_EQ(m.tokenizer_hash, 0xfedcba9876543210ULL);
  EXPECT_EQ(m.model_name, "model.gguf");
  EXPECT_EQ(m.settings, sample_manifest().settings);
  ASSERT_NE(m.find_stage("chunk"), nullptr);
  EXPECT_EQ(m.find_stage("chunk")->inputs_hash, 42u);
  EXPECT_EQ(m.find_stage("chunk")->counts.at("chunks"), 5u);
  EXPECT_EQ(m.find_stage("embed"), nullptr);
  ASSERT_EQ(m.files.size(), 1u);
  EXPECT_EQ(m.files[0].bytes, 1234u);
  EXPECT_EQ(m.files[0].xxh3, 0xabcULL);

  const json j = read_json_file(manifest_path(dir.string()));
  EXPECT_EQ(j.at("magic"), "kvfuse-store");
  EXPECT_EQ(j.at("format_version"), 1);
  EXPECT_EQ(j.at("model_fingerprint"), "0123456789abcdef");
}

// commit_store_file replacing a file: at every moment the manifest accepts what is on disk. Mid-replacement the
// record accepts the old version and the new; once done, the new one alone.
TEST(Manifest, ReplacingAFileKeepsTheOldVersionAcceptedUntilItIsInPlace) {
  const fs::path dir = test_dir();
  Manifest m;
  for (const char* text : {"first", "second!"}) {
    PendingFile file((dir / "t.h5").string());
    std::ofstream(file.temp()) << text;
    commit_store_file(dir.string(), m, file, "t.h5");
  }
  const CommittedFile& done = m.files.at(0);
  EXPECT_FALSE(done.replacing);
  EXPECT_TRUE(done.accepts(7, XXH3_64bits("second!", 7)));
  EXPECT_FALSE(done.accepts(5, XXH3_64bits("first", 5)));
  // A manifest saved mid-replacement round-trips its two versions.
  CommittedFile both = done;
  both.replacing = true;
  both.previous_bytes = 5;
  both.previous_xxh3 = XXH3_64bits("first", 5);
  m.record_file(both);
  save_manifest(dir.string(), m);
  const CommittedFile loaded = load_manifest(dir.string()).files.at(0);
  EXPECT_TRUE(loaded.accepts(5, XXH3_64bits("first", 5)));
  EXPECT_TRUE(loaded.accepts(7, XXH3_64bits("second!", 7)));
  EXPECT_FALSE(loaded.accepts(6, XXH3_64bits("third!", 6)));
}

TEST(Manifest, RecordsReplaceEarlierOnes) {
  Manifest m = sample_manifest();
  m.record_stage({"chunk", "2025-02-01T00:00:00Z", 43, {}});
  m.record_file({"chunks.h5", 99, 1});
  EXPECT_EQ(m.stages.size(), 1u);
  EXPECT_EQ(m.find_stage("chunk")->inputs_hash, 43u);
  EXPECT_EQ(m.files.size(), 1u);
  EXPECT_EQ(m.files[0].bytes, 99u);
}

TEST(Manifest, RefusesAnUnknownFormatVersion) {
  const fs::path dir = test_dir();
  save_manifest(dir.string(), sample_manifest());
  rewrite_manifest(dir, [](json& j) { j["format_version"] = 2; });
  const std::string message = error_of([&] { load_manifest(dir.string()); });
  EXPECT_THAT(message, HasSubstr("manifest.json: field 'format_version' is 2"));
  EXPECT_THAT(message, HasSubstr("reads only version 1"));
}

TEST(Manifest, NamesTheBadField) {
  const fs::path dir = test_dir();
  const auto message_after = [&](const std::function<void(json&)>& edit) {
    save_manifest(dir.string(), sample_manifest());
    rewrite_manifest(dir, edit);
    return error_of([&] { load_manifest(dir.string()); });
  };
  EXPECT_THAT(message_after([](json& j) { j["magic"] = "other"; }), HasSubstr("field 'magic' is 'other'"));
  EXPECT_THAT(message_after([](json& j) { j.erase("model_fingerprint"); }),
              HasSubstr("missing field 'model_fingerprint'"));
  EXPECT_THAT(message_after([](json& j) { j["model_fingerprint"] = "xyz"; }),
              HasSubstr("field 'model_fingerprint': expected 16 lower-case hex digits, got 'xyz'"));
  EXPECT_THAT(message_after([](json& j) { j["stages"][0]["counts"]["chunks"] = -1; }),
              HasSubstr("field 'stages[0].counts.chunks' must be a non-negative integer, got number -1"));
  EXPECT_THAT(message_after([](json& j) { j["files"][0].erase("xxh3"); }), HasSubstr("missing field 'files[0].xxh3'"));
  EXPECT_THAT(message_after([](json& j) { j["settings"]["chunking"] = 5; }),
              HasSubstr("field 'settings.chunking' must be an object"));
  EXPECT_THAT(message_after([](json& j) { j["stages"].push_back(j["stages"][0]); }),
              HasSubstr("stage 'chunk' is recorded twice"));

  std::ofstream(manifest_path(dir.string()), std::ios::trunc) << "{ not json";
  EXPECT_THAT(error_of([&] { load_manifest(dir.string()); }), HasSubstr("manifest.json: not valid JSON"));
}

// A number too large for a double is nlohmann's out_of_range, not its parse_error (found by tests/fuzz): it is a
// kvf::Error naming the file too, where it used to escape as another exception type.
TEST(Manifest, NumberTooLargeIsAnError) {
  const fs::path dir = test_dir();
  std::ofstream(manifest_path(dir.string()), std::ios::trunc) << "{\"magic\": \"kvfuse-store\", \"format_version\": 1e999}";
  const std::string message = error_of([&] { load_manifest(dir.string()); });
  EXPECT_THAT(message, HasSubstr("manifest.json: not valid JSON"));
  EXPECT_THAT(message, HasSubstr("number overflow parsing '1e999'"));
}

TEST(Manifest, RefusesAnotherModel) {
  const Manifest m = sample_manifest();
  EXPECT_NO_THROW(require_same_model(m, m.model_fingerprint, "model.gguf", "store"));
  const std::string message = error_of([&] { require_same_model(m, 0x1111222233334444ULL, "other.gguf", "store"); });
  EXPECT_THAT(message, HasSubstr("0123456789abcdef (model.gguf)"));
  EXPECT_THAT(message, HasSubstr("this model (other.gguf) has fingerprint 1111222233334444"));
}

TEST(Manifest, SettingsAreRecordedThenEnforced) {
  Manifest m;
  const json chunking = {{"chunk_tokens", 256}, {"max_tokens", 320}};
  require_settings(m, "chunking", chunking, "store");
  EXPECT_EQ(m.settings.at("chunking"), chunking);
  EXPECT_NO_THROW(require_settings(m, "chunking", chunking, "store"));
  const std::string message = error_of([&] {
    require_settings(m, "chunking", {{"chunk_tokens", 128}, {"max_tokens", 320}}, "store");
  });
  EXPECT_THAT(message, HasSubstr("chunk_tokens = 256 in the store, 128 now"));
  EXPECT_THAT(message, Not(HasSubstr("max_tokens")));
}

TEST(Manifest, DescribeAndCommitFiles) {
  const fs::path dir = test_dir();
  {
    PendingFile pending((dir / "data").string());
    std::ofstream(pending.temp()) << "hello";
    pending.commit();
    EXPECT_FALSE(fs::exists(pending.temp()));
  }
  const CommittedFile f = describe_file(dir.string(), "data");
  EXPECT_EQ(f.path, "data");
  EXPECT_EQ(f.bytes, 5u);
  EXPECT_EQ(f.xxh3, XXH3_64bits("hello", 5));
  std::ofstream(dir / "empty");
  EXPECT_EQ(describe_file(dir.string(), "empty").bytes, 0u);
}

// A damaged file may declare extents whose product wraps 64 bits (here 2^33 x 2^31 = 2^64, i.e. 0): the reader
// must refuse it, not size its buffer by the wrapped product.
TEST(Hdf5File, OverflowingExtentsAreRefused) {
  const std::string path = (test_dir() / "huge.h5").string();
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {1ull << 33, 1ull << 31}, chunk[2] = {1, 1};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t props = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(props, 2, chunk);  // chunked and never written: the file stays tiny
    const hid_t dset = H5Dcreate2(file, "x", H5T_IEEE_F32LE, space, H5P_DEFAULT, props, H5P_DEFAULT);
    ASSERT_GE(dset, 0);
    H5Dclose(dset);
    H5Pclose(props);
    H5Sclose(space);
    H5Fclose(file);
  }
  const h5::File f = h5::File::open_read(path);
  const std::string message = error_of([&] { f.read<float>("x", {-1, -1}); });
  EXPECT_THAT(message, HasSubstr(path + ": dataset 'x' declares extents whose product overflows"));
}

// A damaged file's attribute may hold an array where one value belongs (found by tests/fuzz): the reader refuses
// it, where it used to copy every value into its one variable (a stack or heap overflow).
TEST(Hdf5File, AttributesWithSeveralValuesAreRefused) {
  const std::string path = (test_dir() / "array_attributes.h5").string();
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t n = 64;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const std::vector<int64_t> ints(n, 7);
    const hid_t version = H5Acreate2(file, "format_version", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Awrite(version, H5T_NATIVE_INT64, ints.data()), 0);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 8);
    const std::string strings(8 * n, 'x');
    const hid_t magic = H5Acreate2(file, "magic", type, space, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Awrite(magic, type, strings.data()), 0);
    H5Aclose(magic);
    H5Tclose(type);
    H5Aclose(version);
    H5Sclose(space);
    H5Fclose(file);
  }
  const h5::File f = h5::File::open_read(path);
  EXPECT_THAT(error_of([&] { f.read_int_attribute("format_version"); }),
              HasSubstr(path + ": attribute 'format_version' holds 64 values, expected one"));
  EXPECT_THAT(error_of([&] { f.read_string_attribute("magic"); }),
              HasSubstr(path + ": attribute 'magic' holds 64 values, expected one"));
}

// ---- chunk table ----

constexpr uint64_t kFingerprint = 0x5eed5eed5eed5eedULL;

ChunkRecord record(const std::string& doc, uint32_t index, std::vector<int32_t> tokens,
                   const std::string& title = "T") {
  return {0, doc, title, "text of " + doc + " #" + std::to_string(index), index, std::move(tokens)};
}

ChunkTable sample_table() {
  ChunkTable t(kFingerprint);
  EXPECT_TRUE(t.add(record("doc-1", 0, {1, 2, 3})));
  EXPECT_TRUE(t.add(record("doc-1", 1, {4, 5}, "")));
  EXPECT_TRUE(t.add(record("döc-ü 😀", 0, {6, 7, 8, 9}, "Tïtle – ünïcode")));
  return t;
}

void expect_same_tables(const ChunkTable& a, const ChunkTable& b) {
  EXPECT_EQ(a.model_fingerprint(), b.model_fingerprint());
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.n_tokens(), b.n_tokens());
  for (size_t i = 0; i < a.size(); ++i) {
    const ChunkRecord& x = a.chunks()[i];
    const ChunkRecord& y = b.chunks()[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.doc_id, y.doc_id);
    EXPECT_EQ(x.title, y.title);
    EXPECT_EQ(x.text, y.text);
    EXPECT_EQ(x.index_in_doc, y.index_in_doc);
    EXPECT_EQ(x.tokens, y.tokens);
  }
}

TEST(ChunkTable, IdsHashTokensWithTheFingerprint) {
  const ChunkTable t = sample_table();
  EXPECT_EQ(t.chunks()[0].id, chunk_id({1, 2, 3}, kFingerprint));
  EXPECT_NE(chunk_id({1, 2, 3}, kFingerprint), chunk_id({1, 2, 3}, kFingerprint + 1));
  EXPECT_NE(chunk_id({1, 2, 3}, kFingerprint), chunk_id({1, 2, 4}, kFingerprint));
  EXPECT_TRUE(t.contains(chunk_id({4, 5}, kFingerprint)));
  EXPECT_EQ(t.n_tokens(), 9u);
}

TEST(ChunkTable, RoundTrip) {
  const fs::path dir = test_dir();
  const std::string path = (dir / "chunks.h5").string();
  const ChunkTable t = sample_table();
  t.write(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  expect_same_tables(ChunkTable::read(path), t);
  std::vector<uint64_t> ids;
  for (const ChunkRecord& c : t.chunks()) ids.push_back(c.id);
  EXPECT_EQ(ChunkTable::read_ids(path), ids);
}

TEST(ChunkTable, EmptyRoundTrip) {
  const std::string path = (test_dir() / "chunks.h5").string();
  ChunkTable(kFingerprint).write(path);
  const ChunkTable t = ChunkTable::read(path);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.model_fingerprint(), kFingerprint);
}

TEST(ChunkTable, AppendKeepsEachChunkOnce) {
  const std::string path = (test_dir() / "chunks.h5").string();
  sample_table().write(path);
  ChunkTable t = ChunkTable::read(path);
  EXPECT_FALSE(t.add(record("doc-2", 0, {1, 2, 3})));  // the same tokens from another document
  EXPECT_TRUE(t.add(record("doc-2", 1, {10, 11})));
  EXPECT_FALSE(t.add(record("doc-3", 0, {10, 11})));
  t.write(path);
  const ChunkTable back = ChunkTable::read(path);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back.chunks()[0].doc_id, "doc-1");  // the first document that brought it
  EXPECT_EQ(back.chunks()[3].doc_id, "doc-2");
  expect_same_tables(back, t);
}

TEST(ChunkTable, DamagedFilesGiveErrors) {
  const fs::path dir = test_dir();
  const std::string path = (dir / "chunks.h5").string();
  sample_table().write(path);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});

  EXPECT_THAT(error_of([&] { ChunkTable::read((dir / "missing.h5").string()); }), HasSubstr("no such file"));
  const std::string garbage = (dir / "garbage.h5").string();
  std::ofstream(garbage, std::ios::binary) << std::string(4096, 'x');
  EXPECT_THAT(error_of([&] { ChunkTable::read(garbage); }), HasSubstr(garbage + ": cannot open as HDF5 (HDF5: "));
  for (size_t size : {size_t(0), size_t(8), bytes.size() / 4, bytes.size() / 2, bytes.size() - 1}) {
    const std::string cut = (dir / ("cut" + std::to_string(size) + ".h5")).string();
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, size);
    EXPECT_THAT(error_of([&] { ChunkTable::read(cut); }), HasSubstr(cut + ":")) << "cut at " << size;
  }
}

// Opens a written table with HDF5 directly to damage one thing in it.
void edit_h5(const std::string& path, const std::function<void(hid_t)>& edit) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  edit(file);
  H5Fclose(file);
}

template <typename T>
void overwrite_dataset(hid_t file, const char* name, hid_t type, const std::vector<T>& values) {
  const hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
  ASSERT_GE(dset, 0);
  ASSERT_GE(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(dset);
}

TEST(ChunkTable, TamperedContentsAreCaught) {
  const fs::path dir = test_dir();
  const auto message_after = [&](const std::function<void(hid_t)>& edit) {
    const std::string path = (dir / "chunks.h5").string();
    sample_table().write(path);
    edit_h5(path, edit);
    return error_of([&] { ChunkTable::read(path); });
  };
  EXPECT_THAT(message_after([](hid_t f) {
                overwrite_dataset<uint64_t>(f, "token_offsets", H5T_NATIVE_UINT64, {0, 3, 99, 9});
              }),
              HasSubstr("dataset 'token_offsets' at row 1 gives tokens [3, 99) outside [0, 9)"));
  EXPECT_THAT(message_after([](hid_t f) {
                overwrite_dataset<uint64_t>(f, "token_offsets", H5T_NATIVE_UINT64, {0, 3, 5, 8});
              }),
              HasSubstr("dataset 'token_offsets' runs from 0 to 8, expected 0 to 9"));
  EXPECT_THAT(message_after([](hid_t f) {
                overwrite_dataset<int32_t>(f, "tokens", H5T_NATIVE_INT32, {1, 2, 3, 4, 5, 6, 7, 8, 0});
              }),
              HasSubstr("row 2: chunk id"));
  EXPECT_THAT(message_after([](hid_t f) { H5Ldelete(f, "title", H5P_DEFAULT); }), HasSubstr("missing dataset 'title'"));
  EXPECT_THAT(message_after([](hid_t f) {
                H5Adelete(f, "format_version");
                const hid_t space = H5Screate(H5S_SCALAR);
                const hid_t attr = H5Acreate2(f, "format_version", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
                const int64_t two = 2;
                H5Awrite(attr, H5T_NATIVE_INT64, &two);
                H5Aclose(attr);
                H5Sclose(space);
              }),
              HasSubstr("attribute 'format_version' is 2, but this kvfuse reads only version 1"));
}

// ---- model fingerprint ----

// A small GGUF: some architecture metadata, a tokenizer key, two tensors.
std::string write_gguf(const fs::path& path, const std::string& name, uint32_t context, float weight,
                       bool reversed_keys = false) {
  gguf::Writer w;
  const auto add_keys = [&](bool first_half) {
    if (first_half) {
      w.add_string("general.architecture", "llama");
      w.add_string("general.name", name);
    } else {
      w.add_u32("llama.context_length", context);
      w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
    }
  };
  add_keys(!reversed_keys);
  add_keys(reversed_keys);
  const std::vector<float> a = {1, 2, 3, weight};
  const std::vector<float> b = {5, 6};
  w.add_tensor_f32("a", {2, 2}, a.data());
  w.add_tensor_f32("b", {2}, b.data());
  w.write(path.string());
  return path.string();
}

uint64_t fingerprint_of(const std::string& path) { return model_fingerprint(*gguf::File::open(path)); }

TEST(ModelFingerprint, HashesArchitectureTokenizerAndTensors) {
  const fs::path dir = test_dir();
  const uint64_t base = fingerprint_of(write_gguf(dir / "base.gguf", "one", 512, 4));
  EXPECT_EQ(fingerprint_of(write_gguf(dir / "renamed.gguf", "another name", 512, 4)), base);
  EXPECT_EQ(fingerprint_of(write_gguf(dir / "reordered.gguf", "one", 512, 4, true)), base);
  EXPECT_NE(fingerprint_of(write_gguf(dir / "context.gguf", "one", 1024, 4)), base);
  EXPECT_NE(fingerprint_of(write_gguf(dir / "weight.gguf", "one", 512, 4.5f)), base);

  const auto tokenizer_of = [](const std::string& p) { return tokenizer_fingerprint(*gguf::File::open(p)); };
  EXPECT_EQ(tokenizer_of((dir / "weight.gguf").string()), tokenizer_of((dir / "base.gguf").string()));
}

TEST(ModelFingerprint, HexForm) {
  EXPECT_EQ(hex64(0x00000000000000abULL), "00000000000000ab");
  EXPECT_EQ(parse_hex64("0123456789abcdef", "x"), 0x0123456789abcdefULL);
  EXPECT_THAT(error_of([] { parse_hex64("0123456789ABCDEF", "field 'f'"); }),
              HasSubstr("field 'f': expected 16 lower-case hex digits, got '0123456789ABCDEF'"));
  EXPECT_THROW(parse_hex64("123", "x"), Error);
}

}  // namespace
}  // namespace kvf
