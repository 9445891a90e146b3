// safetensors reader: files written here byte by byte round-trip; malformed headers, bad ranges and truncated or
// corrupted files end in kvf::Error naming the file (and the tensor), never a crash.
#include "support/test_values.h"
#include "io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/half.h"

namespace kvf::safetensors {
namespace {

using test::error_of;

using ::testing::HasSubstr;

std::string temp_path() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "kvf_" + info->test_suite_name() + "_" + info->name() + ".safetensors";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), (std::streamsize)bytes.size());
  ASSERT_TRUE(out.good()) << path;
}

// The file layout: header length (u64 little-endian), header, data.
std::string file_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[(size_t)i] = (char)((uint64_t)header.size() >> (8 * i));
  return out + header + data;
}

// The message of the kvf::Error that f throws.
template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Three tensors, one per float type, the F16 one at an odd offset, plus metadata and space padding (allowed).
struct Sample {
  std::vector<float> f32 = {1.5f, -2.25f, 0.0f, 3e-8f, 65504.0f, -1e30f};
  std::vector<float> f16_values = {0.5f, -1.0f, 2048.0f, 6.1035156e-05f};
  std::vector<float> bf16_values = {1.0f, -3.5f, 256.0f};
  std::string bytes() const {
    std::vector<uint16_t> f16, bf16;
    for (float v : f16_values) f16.push_back(f32_to_f16(v));
    for (float v : bf16_values) bf16.push_back(f32_to_bf16(v));
    const std::string data = raw(f32) + "x" + raw(f16) + raw(bf16);
    const std::string header = R"({"__metadata__":{"format":"pt","note":"kvf"},)"
                               R"("w.f32":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                               R"("w.f16":{"dtype":"F16","shape":[4],"data_offsets":[25,33]},)"
                               R"("w.bf16":{"dtype":"BF16","shape":[3,1],"data_offsets":[33,39]}}     )";
    return file_bytes(header, data);
  }
};

TEST(Safetensors, RoundTripsFloatTypesAndMetadata) {
  const std::string path = temp_path();
  const Sample s;
  write_bytes(path, s.bytes());
  const auto f = File::open(path);
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "w.f32");  // header order
  EXPECT_EQ(f->tensors()[2].name, "w.bf16");
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("note"), "kvf");

  const TensorInfo& a = f->tensor("w.f32");
  EXPECT_EQ(a.dtype, Dtype::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(f->to_f32(a), s.f32);
  EXPECT_EQ(f->to_f32(f->tensor("w.f16")), s.f16_values);
  EXPECT_EQ(f->to_f32(f->tensor("w.bf16")), s.bf16_values);
  EXPECT_EQ(std::memcmp(f->data(a), s.f32.data(), 24), 0);
  EXPECT_EQ(f->find("missing"), nullptr);
  const std::string missing = error_of([&] { f->tensor("missing"); });
  EXPECT_THAT(missing, HasSubstr(path));
  EXPECT_THAT(missing, HasSubstr("'missing'"));
}

TEST(Safetensors, ScalarsEmptyTensorsAndOtherDtypes) {
  const std::string path = temp_path();
  const std::vector<double> f64 = {0.25};
  const std::vector<int32_t> i32 = {7, -7};
  const std::string header = R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                             R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[8,8]},)"
                             R"("i":{"dtype":"I32","shape":[2],"data_offsets":[8,16]}})";
  write_bytes(path, file_bytes(header, raw(f64) + raw(i32)));
  const auto f = File::open(path);
  EXPECT_EQ(f->tensor("s").numel(), 1);
  EXPECT_EQ(f->to_f32(f->tensor("s")), std::vector<float>{0.25f});
  EXPECT_TRUE(f->to_f32(f->tensor("e")).empty());
  EXPECT_EQ(dtype_size(f->tensor("i").dtype), 4u);
  EXPECT_THAT(error_of([&] { f->to_f32(f->tensor("i")); }), HasSubstr("'i' is I32"));
}

// Each malformed file and a piece of the message it must produce.
TEST(Safetensors, MalformedFilesNameTheProblem) {
  const std::string path = temp_path();
  const std::string t4 = R"("dtype":"F32","shape":[4],"data_offsets":[0,16])";
  const std::string data16(16, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "too short"},
      {std::string("\x05\0\0\0", 4), "too short"},
      {file_bytes("{}", "").substr(0, 8) + "{", "does not fit"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}", "does not fit"},
      {file_bytes("{not json", data16), "not valid JSON"},
      {file_bytes("[1, 2]", data16), "not a JSON object"},
      {file_bytes(R"({"t":5})", data16), "'t': header entry is not an object"},
      {file_bytes(R"({"t":{"shape":[4],"data_offsets":[0,16]}})", data16), "'t': missing dtype"},
      {file_bytes(R"({"t":{"dtype":"F31","shape":[4],"data_offsets":[0,16]}})", data16), "unknown dtype 'F31'"},
      {file_bytes(R"({"t":{"dtype":"F32","data_offsets":[0,16]}})", data16), "'t': missing shape"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data16), "negative dimension"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,16]}})", data16), "non-integer"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}})", data16),
       "larger than the file"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[4]}})", data16), "data_offsets must be"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0]}})", data16), "data_offsets must be"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[8,0]}})", data16), "outside the data"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", data16), "outside the data"},
      {file_bytes(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data16), "needs 12 bytes"},
      {file_bytes(R"({"__metadata__":[1],"t":{)" + t4 + "}}", data16), "__metadata__ is not an object"},
      {file_bytes(R"({"__metadata__":{"k":1},"t":{)" + t4 + "}}", data16), "__metadata__ 'k' is not a string"},
      {file_bytes(R"({"t":{)" + t4 + R"(},"t":{)" + t4 + "}}", data16), "'t' appears twice"},
  };
  for (const auto& [bytes, message] : cases) {
    write_bytes(path, bytes);
    const std::string error = error_of([&] { File::open(path); });
    EXPECT_THAT(error, HasSubstr(path)) << message;
    EXPECT_THAT(error, HasSubstr(message));
  }
  EXPECT_THROW(File::open(path + ".does-not-exist"), Error);
  EXPECT_THROW(File::open(::testing::TempDir()), Error);  // a directory
}

// Every truncation and many random corruptions of a valid file either open (and read back within bounds) or
// throw kvf::Error.
TEST(Safetensors, TruncatedOrCorruptedFilesNeverCrash) {
  const std::string path = temp_path();
  const std::string good = Sample().bytes();
  const auto try_open = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    try {
      const auto f = File::open(path);
      for (const TensorInfo& t : f->tensors()) {
        EXPECT_LE(t.end, bytes.size());
        if (t.dtype == Dtype::F32 || t.dtype == Dtype::F16 || t.dtype == Dtype::BF16) f->to_f32(t);
      }
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n < good.size(); ++n) try_open(good.substr(0, n));
  std::mt19937 rng(42);
  for (int i = 0; i < 400; ++i) {
    std::string bad = good;
    const int flips = 1 + (int)(rng() % 3);
    for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] = (char)(rng() % 256);
    try_open(bad);
  }
}

}  // namespace
}  // namespace kvf::safetensors
