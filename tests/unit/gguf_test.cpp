// GGUF reader and writer: round trips, a gguf-py reference file, every kind of malformed header, and a
// truncation / corruption fuzz that must only ever end in kvf::Error.
#include "io/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/json_file.h"
#include "io/gguf_writer.h"
#include "support/model_files.h"

namespace kvf::gguf {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A file path unique to the running test, so parallel ctest runs do not collide.
std::string temp_path(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "kvf_" + info->test_suite_name() + "_" + info->name() + "_" + suffix;
}

void write_bytes(const std::string& path, const uint8_t* data, size_t n) {
  // A fresh file rather than a truncated one: ext4 flushes files truncated to zero on close, which made the fuzz
  // tests wait on the disk.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), (std::streamsize)n);
  ASSERT_TRUE(out.good()) << path;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Little-endian byte builder for hand-made (mostly malformed) files.
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  // One tensor info: name, dims, type, offset.
  Bytes& tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    str(name).u32((uint32_t)ne.size());
    for (uint64_t n : ne) u64(n);
    return u32(type).u64(offset);
  }
  Bytes& pad(size_t alignment) {
    b.resize((b.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

// Writes the bytes, expects open() to throw kvf::Error, and returns its message (which must start with the path).
std::string open_error(const Bytes& bytes) {
  const std::string path = temp_path("bad.gguf");
  write_bytes(path, bytes.b.data(), bytes.b.size());
  try {
    File::open(path);
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), StartsWith(path + ": "));
    return e.what();
  }
  ADD_FAILURE() << "opened without error";
  return "";
}

void expect_same(const Value& a, const Value& b, const std::string& key) {
  SCOPED_TRACE(key);
  ASSERT_EQ(a.type, b.type);
  if (a.type == ValueType::ARRAY) {
    ASSERT_EQ(a.elem_type, b.elem_type);
    ASSERT_EQ(a.array_size(), b.array_size());
    EXPECT_EQ(a.ints, b.ints);
    EXPECT_EQ(a.strings, b.strings);
    ASSERT_EQ(a.floats.size(), b.floats.size());
    for (size_t k = 0; k < a.floats.size(); ++k) EXPECT_EQ(0, std::memcmp(&a.floats[k], &b.floats[k], 8)) << k;
    for (size_t k = 0; k < a.array.size(); ++k) expect_same(a.array[k], b.array[k], key);
    return;
  }
  EXPECT_EQ(a.i, b.i);
  EXPECT_EQ(0, std::memcmp(&a.f, &b.f, 8)) << a.f << " vs " << b.f;
  EXPECT_EQ(a.s, b.s);
}

Value scalar(ValueType t, int64_t i) {
  Value v;
  v.type = t;
  v.i = i;
  return v;
}

Value array(ValueType elem) {
  Value v;
  v.type = ValueType::ARRAY;
  v.elem_type = elem;
  return v;
}

// Every value type with its extreme values, arrays of every element type, empty and nested arrays.
std::vector<std::pair<std::string, Value>> every_value() {
  std::vector<std::pair<std::string, Value>> kv = {
      {"u8", scalar(ValueType::U8, 255)},
      {"i8", scalar(ValueType::I8, -128)},
      {"u16", scalar(ValueType::U16, 65535)},
      {"i16", scalar(ValueType::I16, -32768)},
      {"u32", scalar(ValueType::U32, 4294967295LL)},
      {"i32", scalar(ValueType::I32, INT32_MIN)},
      {"u64", scalar(ValueType::U64, INT64_MAX)},
      {"i64", scalar(ValueType::I64, INT64_MIN)},
      {"bool_true", scalar(ValueType::BOOL, 1)},
      {"bool_false", scalar(ValueType::BOOL, 0)},
  };
  Value f32;
  f32.type = ValueType::F32;
  f32.f = std::numeric_limits<float>::denorm_min();
  kv.emplace_back("f32", f32);
  Value f64;
  f64.type = ValueType::F64;
  f64.f = -1e308;
  kv.emplace_back("f64", f64);
  Value s;
  s.type = ValueType::STRING;
  s.s = std::string("nul\0inside \xc3\xa9\xe2\x9c\x93", 16);
  kv.emplace_back("string", s);
  s.s.clear();
  kv.emplace_back("empty_string", s);

  const std::vector<std::pair<ValueType, std::vector<int64_t>>> int_arrays = {
      {ValueType::U8, {0, 255}},           {ValueType::I8, {-128, 127}},
      {ValueType::U16, {0, 65535}},        {ValueType::I16, {-32768, 32767}},
      {ValueType::U32, {0, 4294967295LL}}, {ValueType::I32, {INT32_MIN, INT32_MAX}},
      {ValueType::U64, {0, INT64_MAX}},    {ValueType::I64, {INT64_MIN, INT64_MAX}},
      {ValueType::BOOL, {1, 0, 1}},
  };
  for (const auto& [t, ints] : int_arrays) {
    Value a = array(t);
    a.ints = ints;
    kv.emplace_back(std::string("arr_") + value_type_name(t), a);
  }
  Value af32 = array(ValueType::F32);
  af32.floats = {0.5, -1.25, (double)3.0e38f};
  kv.emplace_back("arr_f32", af32);
  Value af64 = array(ValueType::F64);
  af64.floats = {1e-300, -2.5};
  kv.emplace_back("arr_f64", af64);
  Value astr = array(ValueType::STRING);
  astr.strings = {"a", "", "\xc3\xbc"};
  kv.emplace_back("arr_string", astr);
  kv.emplace_back("arr_empty", array(ValueType::I32));
  // [[1, 2], [], [["x"]]]: arrays of arrays, one of them empty, one nested again.
  Value nested = array(ValueType::ARRAY);
  Value inner = array(ValueType::I16);
  inner.ints = {1, 2};
  nested.array.push_back(inner);
  nested.array.push_back(array(ValueType::I16));
  Value deeper = array(ValueType::ARRAY);
  Value leaf = array(ValueType::STRING);
  leaf.strings = {"x"};
  deeper.array.push_back(leaf);
  nested.array.push_back(deeper);
  kv.emplace_back("arr_nested", nested);
  return kv;
}

TEST(GgufWriter, RoundTripsEveryMetadataTypeInVersions2And3) {
  for (uint32_t version : {2u, 3u}) {
    SCOPED_TRACE(version);
    Writer w(version);
    const auto kv = every_value();
    for (const auto& [key, value] : kv) w.add_value(key, value);
    const std::string path = temp_path("meta.gguf");
    w.write(path);
    const auto f = File::open(path);
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_TRUE(f->tensors().empty());
    ASSERT_EQ(f->metadata().size(), kv.size());
    for (const auto& [key, value] : kv) expect_same(f->get(key), value, key);
  }
}

TEST(GgufWriter, ConvenienceSettersAndTypedAccessors) {
  Writer w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 2);
  w.add_i8("i8", -3);
  w.add_u16("u16", 7);
  w.add_i16("i16", -7);
  w.add_i32("i32", -5);
  w.add_u8("u8", 9);
  w.add_u64("u64", 1ull << 40);
  w.add_i64("i64", -(1ll << 40));
  w.add_f32("f32", 1e-5f);
  w.add_f64("f64", 0.1);
  w.add_bool("flag", true);
  w.add_string_array("tokens", {"<s>", "a b"});
  w.add_i32_array("types", {1, -1});
  w.add_f32_array("scores", {0.25f, -3.5f});
  const std::string path = temp_path("conv.gguf");
  w.write(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const auto f = File::open(path);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.block_count"), 2);
  EXPECT_EQ(f->get_int("i8"), -3);
  EXPECT_EQ(f->get_int("u16"), 7);
  EXPECT_EQ(f->get_int("i16"), -7);
  EXPECT_EQ(f->get_int("i32"), -5);
  EXPECT_EQ(f->get_int("u8"), 9);
  EXPECT_EQ(f->get_int("u64"), 1ll << 40);
  EXPECT_EQ(f->get_int("i64"), -(1ll << 40));
  EXPECT_EQ(f->get_float("f32"), (double)1e-5f);
  EXPECT_EQ(f->get_float("f64"), 0.1);
  EXPECT_EQ(f->get_float("llama.block_count"), 2.0);  // integers read as numbers too
  EXPECT_TRUE(f->get_bool("flag"));
  EXPECT_EQ(f->get_int("flag"), 1);
  EXPECT_EQ(f->get_string_array("tokens"), (std::vector<std::string>{"<s>", "a b"}));
  EXPECT_EQ(f->get_int_array("types"), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(f->get_float_array("scores"), (std::vector<double>{0.25, -3.5}));
  EXPECT_EQ(f->get_float_array("types"), (std::vector<double>{1, -1}));
  EXPECT_EQ(f->get("tokens").array_size(), 2u);

  EXPECT_EQ(f->get_string("absent", "dflt"), "dflt");
  EXPECT_EQ(f->get_int("absent", 7), 7);
  EXPECT_EQ(f->get_float("absent", 0.5), 0.5);
  EXPECT_TRUE(f->get_bool("absent", true));
  EXPECT_EQ(f->get_int("llama.block_count", 7), 2);

  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { f->get("absent"); }), path + ": missing metadata key 'absent'");
  EXPECT_EQ(message([&] { f->get_string("llama.block_count"); }),
            path + ": metadata 'llama.block_count' is UINT32, expected STRING");
  EXPECT_THAT(message([&] { f->get_int("general.architecture"); }), HasSubstr("is STRING, expected an integer"));
  EXPECT_THAT(message([&] { f->get_bool("u8"); }), HasSubstr("'u8' is UINT8, expected BOOL"));
  EXPECT_THAT(message([&] { f->get_float("tokens"); }), HasSubstr("is ARRAY of STRING, expected a number"));
  EXPECT_THAT(message([&] { f->get_int_array("scores"); }), HasSubstr("'scores' is ARRAY of FLOAT32"));
  EXPECT_THAT(message([&] { f->get_string_array("types"); }), HasSubstr("expected ARRAY of STRING"));
  EXPECT_THAT(message([&] { f->get_int("general.architecture", 1); }), HasSubstr("'general.architecture' is STRING"));
  EXPECT_THAT(message([&] { f->tensor("nope"); }), HasSubstr("no tensor named 'nope'"));
  EXPECT_EQ(f->find_tensor("nope"), nullptr);
}

TEST(GgufWriter, RoundTripsTensorsWithAlignment) {
  for (uint32_t alignment : {0u, 1u, 64u}) {  // 0: leave the default (32)
    SCOPED_TRACE(alignment);
    Writer w;
    if (alignment) w.set_alignment(alignment);
    std::vector<float> x(4 * 3 * 2 * 64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * (float)i);
    w.add_tensor_f32("f32.4d", {5, 3, 2, 1}, x.data());
    w.add_tensor_f32("q8.2d", {64, 3}, x.data(), GgmlType::Q8_0);
    const uint8_t raw[3] = {1, 2, 3};
    w.add_tensor("i8.1d", GgmlType::I8, {3}, raw, 3);
    w.add_tensor("empty", GgmlType::F32, {0, 4}, nullptr, 0);
    w.add_tensor_f32("scalar", {}, x.data(), GgmlType::F16);
    const std::string path = temp_path("tensors.gguf");
    w.write(path);

    const auto f = File::open(path);
    const uint64_t want_alignment = alignment ? alignment : 32;
    EXPECT_EQ(f->alignment(), want_alignment);
    ASSERT_EQ(f->tensors().size(), 5u);
    EXPECT_EQ(f->tensors()[0].name, "f32.4d");  // file order kept
    for (const TensorInfo& t : f->tensors()) EXPECT_EQ(t.offset % want_alignment, 0u) << t.name;
    const TensorInfo& t4 = f->tensor("f32.4d");
    EXPECT_EQ(t4.type, GgmlType::F32);
    EXPECT_EQ(t4.ne, (std::vector<int64_t>{5, 3, 2, 1}));
    EXPECT_EQ(t4.n_elements, 30u);
    EXPECT_EQ(t4.n_bytes, 120u);
    EXPECT_EQ(t4.rows(), 6);
    EXPECT_EQ(0, std::memcmp(f->tensor_data(t4), x.data(), 120));
    std::vector<float> rows(2 * 5);
    f->dequantize_rows(t4, 3, 2, rows.data());
    EXPECT_EQ(0, std::memcmp(rows.data(), x.data() + 15, rows.size() * 4));

    const TensorInfo& q8 = f->tensor("q8.2d");
    EXPECT_EQ(q8.type, GgmlType::Q8_0);
    EXPECT_EQ(q8.n_bytes, 3u * 2 * 34);
    std::vector<float> q(64 * 3);
    f->dequantize_rows(q8, 0, 3, q.data());
    for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], x[i], 0.01f) << i;

    EXPECT_EQ(0, std::memcmp(f->tensor_data(f->tensor("i8.1d")), raw, 3));
    EXPECT_EQ(f->tensor("empty").n_elements, 0u);
    EXPECT_EQ(f->tensor("empty").rows(), 4);
    const TensorInfo& sc = f->tensor("scalar");
    EXPECT_TRUE(sc.ne.empty());
    EXPECT_EQ(sc.n_elements, 1u);
    EXPECT_EQ(sc.rows(), 1);
    float one = 0;
    f->dequantize_rows(sc, 0, 1, &one);
    EXPECT_EQ(one, 0.0f);  // sin(0)

    auto rows_error = [&](int64_t first, int64_t n) {
      try {
        f->dequantize_rows(t4, first, n, rows.data());
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    EXPECT_THAT(rows_error(5, 2), HasSubstr("tensor 'f32.4d': rows [5, +2) out of range (6 rows)"));
    EXPECT_THAT(rows_error(-1, 1), HasSubstr("out of range"));
  }
}

TEST(GgufWriter, RejectsInvalidInput) {
  auto error = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error([] { Writer w(1); }), HasSubstr("version 1"));
  Writer w;
  w.add_u32("k", 1);
  EXPECT_THAT(error([&] { w.add_string("k", "again"); }), HasSubstr("duplicate metadata key 'k'"));
  EXPECT_THAT(error([&] { w.add_value("big", scalar(ValueType::U8, 256)); }), HasSubstr("256 does not fit UINT8"));
  Value bad = array(ValueType::I8);
  bad.ints = {1, -129};
  EXPECT_THAT(error([&] { w.add_value("arr", bad); }), HasSubstr("-129 does not fit INT8"));
  Value mixed = array(ValueType::ARRAY);
  mixed.array.push_back(scalar(ValueType::U8, 1));
  EXPECT_THAT(error([&] { w.add_value("mixed", mixed); }), HasSubstr("element of an array of arrays is UINT8"));
  EXPECT_THAT(error([&] { w.set_alignment(48); }), HasSubstr("power of two"));
  EXPECT_THAT(error([&] { w.add_u64("u64", ~0ull); }), HasSubstr("above INT64_MAX"));
  const float x[32] = {};
  w.add_tensor_f32("t", {32}, x);
  EXPECT_THAT(error([&] { w.add_tensor_f32("t", {32}, x); }), HasSubstr("duplicate tensor 't'"));
  EXPECT_THAT(error([&] { w.add_tensor("u", GgmlType::Q8_0, {32}, x, 32); }), HasSubstr("needs 34 bytes, got 32"));
  EXPECT_THAT(error([&] { w.add_tensor_f32("v", {33}, x, GgmlType::Q4_0); }),
              HasSubstr("33 elements of Q4_0 are not a whole number of 32-element blocks"));
  EXPECT_THAT(error([&] { w.add_tensor_f32("w", {1, 1, 1, 1, 1}, x); }), HasSubstr("5 dimensions"));
  EXPECT_THAT(error([&] { w.add_tensor_f32("w", {32, -1}, x); }), HasSubstr("tensor 'w': dimension 1 is -1"));
  EXPECT_THAT(error([&] { w.write("/nonexistent-dir/x.gguf"); }), HasSubstr("/nonexistent-dir/x.gguf: cannot create"));
}

// --- the gguf-py reference file (tests/reference/make_quant_fixtures.py) ---

void expect_json_value(const Value& v, const nlohmann::json& want, const std::string& key) {
  SCOPED_TRACE(key);
  ASSERT_EQ(value_type_name(v.type), want["type"].get<std::string>());
  if (v.type != ValueType::ARRAY) {
    const auto& w = want["value"];
    if (v.type == ValueType::STRING)
      EXPECT_EQ(v.s, w.get<std::string>());
    else if (v.type == ValueType::F32 || v.type == ValueType::F64)
      EXPECT_EQ(v.f, w.get<double>());
    else if (v.type == ValueType::BOOL)
      EXPECT_EQ(v.i != 0, w.get<bool>());
    else
      EXPECT_EQ(v.i, w.get<int64_t>());
    return;
  }
  ASSERT_EQ(value_type_name(v.elem_type), want["elem"].get<std::string>());
  const auto& items = want["items"];
  ASSERT_EQ(v.array_size(), items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    Value e;  // the element as a scalar (or the nested array itself)
    if (v.elem_type == ValueType::ARRAY) e = v.array[k];
    e.type = v.elem_type == ValueType::ARRAY ? ValueType::ARRAY : v.elem_type;
    if (!v.ints.empty()) e.i = v.ints[k];
    if (!v.floats.empty()) e.f = v.floats[k];
    if (!v.strings.empty()) e.s = v.strings[k];
    expect_json_value(e, items[k], key + "[" + std::to_string(k) + "]");
  }
}

TEST(GgufReader, ReadsGgufPyReferenceFile) {
  const auto f = File::open(test::fixture_path("quant/reference.gguf.fixture"));
  const nlohmann::json expected = read_json_file(test::fixture_path("quant/expected.json"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_string("general.architecture"), "kvf-test");
  for (const auto& [key, want] : expected["metadata"].items()) expect_json_value(f->get(key), want, key);
  ASSERT_EQ(f->tensors().size(), expected["tensors"].size());
  for (const auto& [name, want] : expected["tensors"].items()) {
    const TensorInfo& t = f->tensor(name);
    EXPECT_STREQ(ggml_type_name(t.type), want["type"].get<std::string>().c_str()) << name;
    EXPECT_EQ(t.ne, want["ne"].get<std::vector<int64_t>>()) << name;
    EXPECT_EQ(t.offset % 64, 0u);
  }
}

// --- malformed files: each names the file, the field and the bad value ---

TEST(GgufReader, RejectsBadHeaders) {
  EXPECT_THAT(open_error(Bytes{}), HasSubstr("truncated: GGUF header needs 24 bytes at offset 0"));
  EXPECT_THAT(open_error(Bytes{}.u32(0x46554746).u32(3).u64(0).u64(0)), HasSubstr("not a GGUF file (it does not begin with \"GGUF\")"));
  EXPECT_THAT(open_error(Bytes{}.header(1, 0, 0)), HasSubstr("GGUF version 1 is not supported"));
  EXPECT_THAT(open_error(Bytes{}.header(4, 0, 0)), HasSubstr("unsupported GGUF version 4"));
  EXPECT_THAT(open_error(Bytes{}.header(0x03000000, 0, 0)), HasSubstr("big-endian GGUF"));
  EXPECT_THAT(open_error(Bytes{}.header(3, 0, 1ull << 60)), HasSubstr("metadata count 1152921504606846976 cannot fit"));
  EXPECT_THAT(open_error(Bytes{}.header(3, 1ull << 40, 0)), HasSubstr("tensor count 1099511627776 cannot fit"));
}

TEST(GgufReader, RejectsBadMetadata) {
  auto kv = [](uint32_t type) { return Bytes{}.header(3, 0, 1).str("key.x").u32(type); };
  EXPECT_THAT(open_error(Bytes{}.header(3, 0, 1).u64(1ull << 62).zeros(8)),
              HasSubstr("metadata entry #0 key: string length 4611686018427387904 at offset 24 exceeds the 8 bytes"));
  EXPECT_THAT(open_error(kv(8).u64(100).str("short")), HasSubstr("value of 'key.x': string length 100"));
  EXPECT_THAT(open_error(kv(13).u32(0)), HasSubstr("metadata 'key.x': unknown value type 13"));
  EXPECT_THAT(open_error(kv(4).put<uint16_t>(1)), HasSubstr("truncated: value of 'key.x' needs 4 bytes at offset"));
  EXPECT_THAT(open_error(kv(7).put<uint8_t>(2)), HasSubstr("'key.x': BOOL byte is 2"));
  EXPECT_THAT(open_error(kv(10).u64(~0ull)), HasSubstr("UINT64 value 18446744073709551615 is above INT64_MAX"));
  EXPECT_THAT(open_error(kv(9).u32(42).u64(1)), HasSubstr("'key.x': unknown array element type 42"));
  EXPECT_THAT(open_error(kv(9).u32(4).u64(1ull << 61).u32(1)),
              HasSubstr("'key.x': array of 2305843009213693952 UINT32 cannot fit in the 4 bytes left"));
  EXPECT_THAT(open_error(kv(9).u32(8).u64(1ull << 40).str("a")), HasSubstr("array of 1099511627776 STRING"));
  Bytes deep = kv(9);
  for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
  EXPECT_THAT(open_error(deep), HasSubstr("'key.x': arrays nested deeper than 8"));
  const Bytes dup = Bytes{}.header(3, 0, 2).str("key.x").u32(4).u32(1).str("key.x").u32(4).u32(2);
  EXPECT_THAT(open_error(dup), HasSubstr("duplicate metadata key 'key.x'"));
}

TEST(GgufReader, RejectsBadAlignment) {
  auto with = [](uint32_t type, auto value) {
    return Bytes{}.header(3, 0, 1).str("general.alignment").u32(type).put(value);
  };
  EXPECT_THAT(open_error(with(4, uint32_t(0))), HasSubstr("general.alignment 0 is not a positive power of two"));
  EXPECT_THAT(open_error(with(4, uint32_t(48))), HasSubstr("general.alignment 48 is not"));
  EXPECT_THAT(open_error(with(6, 32.0f)), HasSubstr("general.alignment is FLOAT32, expected an unsigned integer"));
  // Any integer type is accepted, not only the UINT32 the spec writes.
  const std::string path = temp_path("align.gguf");
  const Bytes ok = with(10, uint64_t(16));
  write_bytes(path, ok.b.data(), ok.b.size());
  EXPECT_EQ(File::open(path)->alignment(), 16u);
}

// A file with one tensor info and `data_bytes` zero bytes of data after the aligned header.
Bytes one_tensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset, size_t data_bytes) {
  Bytes b = Bytes{}.header(3, 1, 0).tensor("w", ne, type, offset);
  return b.pad(32).zeros(data_bytes);
}

TEST(GgufReader, RejectsBadTensorInfos) {
  EXPECT_THAT(open_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 4)), HasSubstr("tensor 'w': 5 dimensions (at most 4)"));
  EXPECT_THAT(open_error(one_tensor({1ull << 63}, 0, 0, 0)),
              HasSubstr("tensor 'w': dimension 0 is 9223372036854775808"));
  EXPECT_THAT(open_error(one_tensor({1ull << 32, 1ull << 32}, 0, 0, 0)),
              HasSubstr("tensor 'w': element count overflows (dimension 1 is 4294967296)"));
  EXPECT_THAT(open_error(one_tensor({0, 1ull << 40, 1ull << 40}, 0, 0, 0)), HasSubstr("element count overflows"));
  EXPECT_THAT(open_error(one_tensor({1ull << 61}, 28, 0, 0)), HasSubstr("tensor 'w': byte size overflows"));
  EXPECT_THAT(open_error(one_tensor({33, 2}, 2, 0, 64)),
              HasSubstr("tensor 'w': row length 33 is not a multiple of the Q4_0 block size 32"));
  EXPECT_THAT(open_error(one_tensor({8}, 0, 0, 31)),
              HasSubstr("tensor 'w': data [0, +32) runs past the end of the data section (31 bytes from offset 64)"));
  EXPECT_THAT(open_error(one_tensor({8}, 0, ~0ull - 31, 64)), HasSubstr("runs past the end"));
  EXPECT_THAT(open_error(one_tensor({8}, 0, 16, 64)),
              HasSubstr("tensor 'w': data offset 16 is not a multiple of the alignment 32"));
  Bytes header_only = Bytes{}.header(3, 1, 0).tensor("w", {8}, 0, 0);
  EXPECT_THAT(open_error(header_only), HasSubstr("runs past the end of the data section (0 bytes"));
  Bytes cut = Bytes{}.header(3, 1, 0).str("w").u32(4).u64(4).u64(4).u64(4);
  EXPECT_THAT(open_error(cut), HasSubstr("truncated: shape of tensor 'w' needs 8 bytes"));
}

TEST(GgufReader, RejectsOverlappingAndDuplicateTensors) {
  Bytes overlap = Bytes{}.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad(32).zeros(128);
  EXPECT_THAT(open_error(overlap), HasSubstr("tensors 'a' [0, +64) and 'b' [32, ...) overlap"));
  Bytes dup = Bytes{}.header(3, 2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad(32).zeros(64);
  EXPECT_THAT(open_error(dup), HasSubstr("duplicate tensor name 'a'"));
}

TEST(GgufReader, KeepsUnknownTensorTypesUntilConverted) {
  const std::string path = temp_path("unknown.gguf");
  const Bytes b = Bytes{}.header(3, 2, 0).tensor("odd", {32, 2}, 99, 0).tensor("iq", {256}, 16, 64).pad(32).zeros(128);
  write_bytes(path, b.b.data(), b.b.size());
  const auto f = File::open(path);
  const TensorInfo& odd = f->tensor("odd");
  EXPECT_EQ((uint32_t)odd.type, 99u);
  EXPECT_EQ(odd.n_bytes, 0u);  // unknown layout
  EXPECT_EQ(odd.n_elements, 64u);
  float out[64];
  try {
    f->dequantize_rows(odd, 0, 1, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": tensor 'odd': converting type 99 to f32 is not supported");
  }
  EXPECT_THROW(f->dequantize_rows(f->tensor("iq"), 0, 1, out), Error);
}

TEST(GgufReader, RejectsFilesThatAreNotThere) {
  EXPECT_THROW(File::open(temp_path("missing.gguf")), Error);
  EXPECT_THROW(File::open(::testing::TempDir()), Error);
  try {
    File::open("/nonexistent/x.gguf");
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), StartsWith("/nonexistent/x.gguf: cannot open"));
  }
}

// --- fuzz: a small valid file cut at every length and corrupted at random must parse or throw kvf::Error ---

std::vector<uint8_t> small_valid_file() {
  Writer w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 2);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "bc", "<s>"});
  w.add_f32_array("tokenizer.ggml.scores", {0.5f, -1.0f, 2.0f});
  Value nested = array(ValueType::ARRAY);
  Value inner = array(ValueType::I32);
  inner.ints = {1, 2, 3};
  nested.array = {inner, inner};
  w.add_value("nested", nested);
  std::vector<float> x(64 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos((float)i);
  w.add_tensor_f32("a", {64, 2}, x.data(), GgmlType::Q4_1);
  w.add_tensor_f32("b", {32, 2}, x.data(), GgmlType::Q8_0);
  w.add_tensor_f32("c", {8}, x.data(), GgmlType::F16);
  const std::string path = temp_path("valid.gguf");
  w.write(path);
  return read_bytes(path);
}

// Opens the bytes; when that succeeds, reads everything the file offers. Only kvf::Error may escape.
bool parse_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_bytes(path, bytes.data(), bytes.size());
  try {
    const auto f = File::open(path);
    for (const auto& kv : f->metadata()) (void)kv.second.array_size();
    for (const TensorInfo& t : f->tensors()) {
      if (!ggml_type_supported(t.type)) continue;  // other types may claim any element count
      std::vector<float> out((size_t)t.n_elements);
      f->dequantize_rows(t, 0, t.rows(), out.data());
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(GgufFuzz, TruncatedAtEveryLength) {
  const std::vector<uint8_t> file = small_valid_file();
  const std::string path = temp_path("cut.gguf");
  ASSERT_TRUE(parse_all(path, file));
  size_t parsed = 0;
  for (size_t n = 0; n < file.size(); ++n)
    parsed += parse_all(path, std::vector<uint8_t>(file.begin(), file.begin() + n));
  // Only cuts inside the last tensor's padding can still parse.
  EXPECT_LT(parsed, 32u);
}

TEST(GgufFuzz, RandomCorruption) {
  const std::vector<uint8_t> file = small_valid_file();
  const std::string path = temp_path("corrupt.gguf");
  std::mt19937 rng(12345);
  int parsed = 0;
  for (int variant = 0; variant < 3000; ++variant) {
    std::vector<uint8_t> bytes = file;
    const int flips = 1 + (int)(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      // Half the hits go to the header and tensor infos, where they matter most.
      const size_t where = rng() % 2 ? rng() % std::min<size_t>(bytes.size(), 400) : rng() % bytes.size();
      bytes[where] = rng() % 3 == 0 ? 0xff : (uint8_t)rng();
    }
    if (variant % 10 == 0) bytes.resize(rng() % bytes.size());
    parsed += parse_all(path, bytes);
  }
  EXPECT_GT(parsed, 0);  // some flips land in tensor data and leave the file valid
}

}  // namespace
}  // namespace kvf::gguf
