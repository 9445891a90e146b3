// Bad model files and prompts get one kvf::Error naming the cause, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "io/gguf_writer.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

std::string load_error(const std::string& path) {
  auto backend = make_cpu_backend();
  try {
    Decoder::load(path, *backend);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DecoderLoadErrors, UnknownArchitectureIsNamed) {
  gguf::Writer w;
  w.add_string("general.architecture", "mamba");
  const std::string path = (std::filesystem::temp_directory_path() / "kvf-mamba.gguf").string();
  w.write(path);
  EXPECT_NE(load_error(path).find("unknown architecture 'mamba'"), std::string::npos) << load_error(path);
}

// A damaged file's bytes quoted in a message are shown as \xNN (NUL, control bytes, invalid UTF-8), never raw.
TEST(DecoderLoadErrors, CorruptBytesInMessagesAreEscaped) {
  gguf::Writer w;
  w.add_string("general.architecture", std::string("ma\0m\xff\x1b[2Jba \xc3\xa9", 14));
  const std::string path = (std::filesystem::temp_directory_path() / "kvf-corrupt-arch.gguf").string();
  w.write(path);
  const std::string msg = load_error(path);
  EXPECT_NE(msg.find("unknown architecture 'ma\\x00m\\xff\\x1b[2Jba \xc3\xa9'"), std::string::npos) << msg;
  EXPECT_EQ(printable_message(msg), msg);  // escaping twice changes nothing
  EXPECT_EQ(printable_message("tab\tnew\nline \xe2\x82\xac \xe2\x82 \xc0\xaf \x7f"),
            "tab\tnew\nline \xe2\x82\xac \\xe2\\x82 \\xc0\\xaf \\x7f");
}

TEST(DecoderLoadErrors, UnsupportedTensorTypeNamesTensorAndType) {
  test::TinyModelSpec spec;
  spec.hidden = 256;  // rows of 256: one Q2_K super-block
  const std::string good = test::write_tiny_model(spec);
  // Store one tensor as Q2_K, which this build cannot convert, with the right shape and byte count.
  const auto file = gguf::File::open(good);
  gguf::Writer w;
  for (const auto& [key, value] : file->metadata()) w.add_value(key, value);
  for (const auto& t : file->tensors()) {
    const bool victim = t.name == "blk.1.attn_k.weight";
    std::vector<uint8_t> bytes(file->tensor_data(t), file->tensor_data(t) + t.n_bytes);
    if (victim) bytes.assign(ggml_row_bytes(GgmlType::Q2_K, t.ne[0]) * t.rows(), 0);
    w.add_tensor(t.name, victim ? GgmlType::Q2_K : t.type, t.ne, bytes.data(), bytes.size());
  }
  const std::string bad = good + ".q2k.gguf";
  w.write(bad);
  const std::string msg = load_error(bad);
  EXPECT_NE(msg.find("blk.1.attn_k.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Q2_K"), std::string::npos) << msg;
}

// The tiny model with metadata `key` set to `value` (f32), written next to it.
std::string with_metadata(const std::string& key, float value) {
  const std::string good = test::write_tiny_model({});
  const auto file = gguf::File::open(good);
  gguf::Writer w;
  for (const auto& [k, v] : file->metadata())
    if (k != key) w.add_value(k, v);
  w.add_f32(key, value);
  for (const auto& t : file->tensors()) w.add_tensor(t.name, t.type, t.ne, file->tensor_data(t), t.n_bytes);
  const std::string path = good + "." + key + "=" + std::to_string(value) + ".gguf";
  w.write(path);
  return path;
}

// A NaN epsilon or a NaN / non-positive RoPE base made a model that loads and silently generates nothing.
TEST(DecoderLoadErrors, NonFiniteNormEpsilonAndBadRopeBaseAreRefused) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string eps = load_error(with_metadata("llama.attention.layer_norm_rms_epsilon", nan));
  EXPECT_NE(eps.find("metadata 'llama.attention.layer_norm_rms_epsilon' = nan is not a finite number >= 0"),
            std::string::npos) << eps;
  for (const float base : {nan, 0.0f, -10000.0f}) {
    const std::string msg = load_error(with_metadata("llama.rope.freq_base", base));
    EXPECT_NE(msg.find("metadata 'llama.rope.freq_base' = "), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not a finite positive number"), std::string::npos) << msg;
  }
}

// A declared context of 2^31 - 1 positions must not size the RoPE table (it would need terabytes).
TEST(DecoderLoadErrors, HugeContextLengthDoesNotSizeTheRopeTable) {
  test::TinyModelSpec spec;
  spec.context = std::numeric_limits<int32_t>::max();
  auto backend = make_cpu_backend();
  const auto decoder = Decoder::load(test::write_tiny_model(spec), *backend);
  EXPECT_EQ(decoder->config().context_length, spec.context);
  const std::vector<int32_t> prompt(4, 3);
  GreedyOptions o;
  o.max_new_tokens = 2;
  EXPECT_EQ(generate_greedy(*decoder, prompt, o).tokens.size(), 2u);
}

TEST(DecoderLoadErrors, TruncatedFileIsNamed) {
  const std::string good = test::write_tiny_model({});
  const std::string cut = good + ".cut.gguf";
  std::filesystem::copy_file(good, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(good) / 2);
  const std::string msg = load_error(cut);
  EXPECT_EQ(msg.rfind(cut, 0), 0u) << msg;  // starts with the path
}

TEST(DecoderLoadErrors, PromptLongerThanTheContextIsRefused) {
  test::TinyModelSpec spec;
  spec.context = 64;
  auto backend = make_cpu_backend();
  const auto decoder = Decoder::load(test::write_tiny_model(spec), *backend);
  const std::vector<int32_t> prompt(65, 3);
  try {
    generate_greedy(*decoder, prompt, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("65 tokens, more than the model context of 64"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kvf
