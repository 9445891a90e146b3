// kvf_int_dot_bench: the integer dot-product kernel of this CPU's kernel table (backend/cpu/int_dot.h; the one
// KVF_GEMM_KERNEL names, e.g. avx2-int16 on an AVX-512 CPU) over one block format, on one thread: nanoseconds per
// unit of 32 weights and activation row. The weights are random block bytes with a small scale in every f16 scale
// field, few enough rows by default (256) to stay in L2, so it times the kernel's arithmetic, not the memory;
// --rows-of-weights past the L3 times both. Decoding one sequence is --rows 1.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int_dot.h"
#include "core/dtype.h"
#include "core/half.h"

namespace {

using kvf::DType;

// Where each format keeps its f16 scale fields within a block (core/ggml_types.cpp); random bytes there could be
// infinities or NaNs.
const std::map<std::string, std::pair<DType, std::vector<size_t>>> kFormats = {
    {"q4_0", {DType::Q4_0, {0}}},    {"q4_1", {DType::Q4_1, {0, 2}}}, {"q5_0", {DType::Q5_0, {0}}},
    {"q5_1", {DType::Q5_1, {0, 2}}}, {"q8_0", {DType::Q8_0, {0}}},    {"q4_k", {DType::Q4_K, {0, 2}}},
    {"q6_k", {DType::Q6_K, {208}}},
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time this CPU's integer dot-product kernel over one block format (one thread)"};
  std::string format = "q4_k";
  int64_t k = 1536, m = 256, rows = 1, runs = 5;
  app.add_option("--format", format, "weight format")
      ->capture_default_str()
      ->check(CLI::IsMember({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q6_k"}));
  app.add_option("--k", k, "values per row (a multiple of the format's block)")->capture_default_str();
  app.add_option("--rows-of-weights", m, "weight rows (outputs per activation row)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--rows", rows, "activation rows")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--runs", runs, "timed runs of about 0.2 s; the fastest is reported")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto& [type, scale_fields] = kFormats.at(format);
  if (k <= 0 || k % kvf::dtype_block_elems(type) != 0) {
    std::fprintf(stderr, "kvf_int_dot_bench: --k %lld is not a positive multiple of %s's %lld-value block\n",
                 (long long)k, format.c_str(), (long long)kvf::dtype_block_elems(type));
    return 2;
  }
  if (!kvf::cpu::int_dot_available(type)) {
    std::fprintf(stderr, "kvf_int_dot_bench: no integer dot-product kernel for %s on this CPU (%s)\n", format.c_str(),
                 kvf::cpu::cpu_kernels_report().c_str());
    return 2;
  }

  std::mt19937 rng(1);
  const size_t row_bytes = kvf::dtype_bytes(type, k), block_bytes = kvf::dtype_block_bytes(type);
  std::vector<uint8_t> w(row_bytes * (size_t)m);
  for (uint8_t& b : w) b = (uint8_t)rng();
  const uint16_t scale = kvf::f32_to_f16(0.002f);
  for (size_t at = 0; at < w.size(); at += block_bytes)
    for (size_t field : scale_fields) std::memcpy(&w[at + field], &scale, 2);

  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x((size_t)(rows * k));
  for (float& v : x) v = normal(rng);
  kvf::cpu::Int16Rows xi;
  kvf::cpu::quantize_rows_int16(x.data(), rows, k, xi);
  std::vector<float> y((size_t)(rows * m));

  const double units = (double)(k / 32) * (double)m * (double)rows;
  const int64_t calls = std::max<int64_t>(1, (int64_t)(0.2e9 / units));  // about 0.2 s at 1 ns a unit
  double best = 1e30;
  for (int64_t run = 0; run <= runs; ++run) {  // run 0 warms up
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < calls; ++c) kvf::cpu::int_dot_rows(type, w.data(), row_bytes, (int)m, xi, y.data(), m);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / (double)calls;
    if (run > 0) best = std::min(best, s);
  }
  std::printf("%s k=%lld, %lld weight rows (%.0f KB), %lld activation rows: %.3f ns per unit of 32 weights and row "
              "(%s; %s)\n",
              format.c_str(), (long long)k, (long long)m, (double)w.size() / 1024, (long long)rows, best * 1e9 / units,
              kvf::cpu::cpu_kernels_report().c_str(), kvf::cpu::cpu_features().model.c_str());
  return 0;
}
