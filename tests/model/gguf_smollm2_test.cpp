// The real SmolLM2-135M-Instruct Q4_1 GGUF: inventory, rows bit-exact against gguf-py
// (tests/fixtures/quant/smollm2_rows.json, made by tests/reference/make_quant_fixtures.py), every tensor converts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/json_file.h"
#include "io/gguf.h"
#include "support/model_files.h"

namespace kvf::gguf {
namespace {

std::shared_ptr<const File> smollm2() { return File::open(test::smollm2_gguf()); }

TEST(GgufSmolLM2, Inventory) {
  const auto f = smollm2();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.block_count"), 30);
  EXPECT_EQ(f->get_int("llama.embedding_length"), 576);
  EXPECT_EQ(f->get_int("llama.attention.head_count"), 9);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 3);
  EXPECT_EQ(f->get_float("llama.rope.freq_base"), 100000.0);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").size(), 49152u);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.merges").size(), 48900u);
  ASSERT_EQ(f->tensors().size(), 272u);
  std::map<std::string, int> counts;
  for (const TensorInfo& t : f->tensors()) ++counts[ggml_type_name(t.type)];
  EXPECT_EQ(counts, (std::map<std::string, int>{{"F32", 61}, {"Q4_1", 210}, {"Q8_0", 1}}));
  const TensorInfo& embd = f->tensor("token_embd.weight");
  EXPECT_EQ(embd.type, GgmlType::Q8_0);
  EXPECT_EQ(embd.ne, (std::vector<int64_t>{576, 49152}));
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // the output head is tied to token_embd
  EXPECT_EQ(f->tensor("blk.0.attn_k.weight").ne, (std::vector<int64_t>{576, 192}));
  EXPECT_EQ(f->tensor("blk.29.ffn_down.weight").ne, (std::vector<int64_t>{1536, 576}));
}

TEST(GgufSmolLM2, RowsMatchGgufPyBitExact) {
  const auto f = smollm2();
  const nlohmann::json rows = read_json_file(test::fixture_path("quant/smollm2_rows.json"));
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& [name, want] : rows.items()) {
    const TensorInfo& t = f->tensor(name);
    EXPECT_STREQ(ggml_type_name(t.type), want["type"].get<std::string>().c_str());
    EXPECT_EQ(t.ne, want["ne"].get<std::vector<int64_t>>());
    for (const auto& [which, row] : std::map<std::string, int64_t>{{"0", 0}, {"last", t.rows() - 1}}) {
      SCOPED_TRACE(name + " row " + which);
      const std::vector<float> expected = want[which].get<std::vector<float>>();
      std::vector<float> got((size_t)t.ne[0]);
      f->dequantize_rows(t, row, 1, got.data());
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "column " << i;
    }
  }
}

TEST(GgufSmolLM2, EveryTensorConvertsToFiniteValues) {
  const auto f = smollm2();
  std::vector<float> buf;
  uint64_t total = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const TensorInfo& t : f->tensors()) {
    buf.resize((size_t)t.n_elements);
    f->dequantize_rows(t, 0, t.rows(), buf.data());
    for (float v : buf) ASSERT_TRUE(std::isfinite(v)) << t.name;
    total += t.n_elements;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(total, 134515008u);
  std::printf("dequantized %llu weights in %.3f s (one thread, with the finiteness scan)\n", (unsigned long long)total,
              s);
}

}  // namespace
}  // namespace kvf::gguf
