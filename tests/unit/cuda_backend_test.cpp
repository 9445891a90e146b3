// The CUDA backend against the CPU backend, op by op over many shapes, and whole tiny models' logits. Where no
// GPU is visible (or the build has no CUDA backend) every test here is skipped, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>

#include "backend/backend.h"
#include "core/half.h"
#include "model/decoder.h"
#include "model/rope_frequencies.h"
#include "support/test_values.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

std::vector<float> host(Backend& b, const Tensor& t) {
  std::vector<float> v((size_t)t.numel());
  b.copy_to_host(t, v.data(), v.size() * 4);
  return v;
}

// Largest |a - b| relative to the largest |a|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 1e-30;
  for (float x : a) scale = std::max(scale, (double)std::abs(x));
  return test::max_abs_diff(a, b) / scale;
}

class CudaVsCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << why;
    gpu = make_cuda_backend();
  }
  // The same values as a tensor on each backend.
  struct Pair {
    Tensor cpu, gpu;
  };
  Pair upload(const std::vector<float>& v, const Shape& shape) {
    Pair p{cpu->empty(DType::F32, shape), gpu->empty(DType::F32, shape)};
    cpu->copy_from_host(p.cpu, v.data(), v.size() * 4);
    gpu->copy_from_host(p.gpu, v.data(), v.size() * 4);
    return p;
  }
  Pair random(const Shape& shape, uint32_t seed, float scale = 1.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v((size_t)n);
    for (float& x : v) x = d(rng);
    return upload(v, shape);
  }
  Pair ints(const std::vector<int32_t>& v) {
    Pair p{cpu->empty(DType::I32, {(int64_t)v.size()}), gpu->empty(DType::I32, {(int64_t)v.size()})};
    cpu->copy_from_host(p.cpu, v.data(), v.size() * 4);
    gpu->copy_from_host(p.gpu, v.data(), v.size() * 4);
    return p;
  }
  Pair zeros(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return upload(std::vector<float>((size_t)n, 0.0f), shape);
  }
  // x [n, k] and w [m, k] rounded to bf16 (f32 tensors on both backends, and w as bf16 on the GPU), y [n, m] zeros.
  struct Bf16Product {
    Pair x, w, y;
    Tensor w_bf16;
  };
  Bf16Product bf16_product(int64_t n, int64_t m, int64_t k) {
    std::mt19937 rng((uint32_t)(n + m + k));
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x((size_t)(n * k)), w((size_t)(m * k));
    std::vector<uint16_t> w_bf16(w.size());
    for (float& v : x) v = bf16_to_f32(f32_to_bf16(d(rng)));
    for (size_t i = 0; i < w.size(); ++i) w_bf16[i] = f32_to_bf16(d(rng)), w[i] = bf16_to_f32(w_bf16[i]);
    Bf16Product p{upload(x, {n, k}), upload(w, {m, k}), zeros({n, m}), gpu->empty(DType::BF16, {m, k})};
    gpu->copy_from_host(p.w_bf16, w_bf16.data(), w_bf16.size() * 2);
    return p;
  }
  // Largest |cpu - gpu| over the pair, relative to the largest |cpu|.
  double relative_diff(const Pair& p) { return relative_difference(host(*cpu, p.cpu), host(*gpu, p.gpu)); }

  // One attention call with probes on either backend, over the same values.
  struct AttentionPairs {
    Pair q, q_pos, k, v, k_pos, out, probe_rows, colsum;
  };
  void attend(bool on_gpu, const AttentionPairs& p, int64_t head_dim, bool bf16_inputs) {
    const auto pick = [&](const Pair& x) { return on_gpu ? x.gpu : x.cpu; };
    AttentionArgs a;
    a.q = pick(p.q), a.q_pos = pick(p.q_pos), a.k = pick(p.k), a.v = pick(p.v), a.k_pos = pick(p.k_pos);
    a.out = pick(p.out), a.probe_rows = pick(p.probe_rows), a.probe_colsum = pick(p.colsum);
    a.scale = 1.0f / std::sqrt((float)head_dim);
    a.bf16_inputs = bf16_inputs;
    (on_gpu ? *gpu : *cpu).attention(a);
  }

  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::unique_ptr<Backend> gpu;
};

// Sets an environment variable for a scope, then puts back what was there (the tensor-core attention reads
// KVF_FLASH_WARP_ROWS per call: the tests run each of its forms; a backend reads KVF_GEMM_TUNE per product shape).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST_F(CudaVsCpu, Matmul) {
  for (auto [n, m, k] : {std::tuple{1, 7, 5}, {3, 576, 576}, {64, 1536, 576}, {129, 49, 200}, {0, 4, 4}}) {
    Pair x = random({n, k}, 1), w = random({m, k}, 2), y = zeros({n, m});
    cpu->matmul_nt(x.cpu, w.cpu, y.cpu);
    gpu->matmul_nt(x.gpu, w.gpu, y.gpu);
    if (n) {
      EXPECT_LT(relative_diff(y), 1e-5) << n << "x" << m << "x" << k;
    }
  }
}

TEST_F(CudaVsCpu, RowOps) {
  for (auto [rows, d] : {std::pair{1, 64}, {37, 576}, {5, 1000}, {3, 30}}) {  // the last: not in fours
    Pair x = random({rows, d}, 3), w = random({d}, 4), y = zeros({rows, d});
    cpu->rms_norm(x.cpu, w.cpu, 1e-5f, y.cpu);
    gpu->rms_norm(x.gpu, w.gpu, 1e-5f, y.gpu);
    EXPECT_LT(relative_diff(y), 1e-6) << "rms_norm " << rows << "x" << d;
    Pair bias = random({d}, 5);
    cpu->add_bias(x.cpu, bias.cpu);
    gpu->add_bias(x.gpu, bias.gpu);
    EXPECT_EQ(relative_diff(x), 0.0) << "add_bias";
    cpu->add_inplace(x.cpu, y.cpu);
    gpu->add_inplace(x.gpu, y.gpu);
    EXPECT_EQ(relative_diff(x), 0.0) << "add_inplace";
    Pair out = zeros({rows, d});
    cpu->swiglu(x.cpu, y.cpu, out.cpu);
    gpu->swiglu(x.gpu, y.gpu, out.gpu);
    EXPECT_LT(relative_diff(out), 1e-6) << "swiglu";
  }
}

// The BERT encoder's LayerNorm and GELU (kvprep embed --backend cuda): the host code through copies, so exactly the
// CPU's values.
TEST_F(CudaVsCpu, EncoderRowOpsThroughTheHost) {
  Pair x = random({37, 384}, 6, 3.0f), gamma = random({384}, 7), beta = random({384}, 8), bias = random({384}, 9);
  cpu->layer_norm(x.cpu, gamma.cpu, beta.cpu, 1e-12f);
  gpu->layer_norm(x.gpu, gamma.gpu, beta.gpu, 1e-12f);
  EXPECT_EQ(relative_diff(x), 0.0) << "layer_norm";
  cpu->bias_gelu(x.cpu, bias.cpu);
  gpu->bias_gelu(x.gpu, bias.gpu);
  EXPECT_EQ(relative_diff(x), 0.0) << "bias_gelu";
}

// The fast mode's matmul inputs: rms_norm and SwiGLU written as bf16 are the f32 results rounded to nearest, and a
// bf16 x gives the product of those values.
TEST_F(CudaVsCpu, RowOpsIntoBf16AndBf16MatmulInput) {
  const auto bf16_host = [&](const Tensor& t) {
    std::vector<uint16_t> bits((size_t)t.numel());
    gpu->copy_to_host(t, bits.data(), bits.size() * 2);
    std::vector<float> v(bits.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_f32(bits[i]);
    return v;
  };
  const auto rounded = [](std::vector<float> v) {
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(x));
    return v;
  };
  const int rows = 37, d = 576, m = 129;
  Pair x = random({rows, d}, 3), w = random({d}, 4), y = zeros({rows, d}), up = random({rows, d}, 6);
  Tensor yb = gpu->empty(DType::BF16, {rows, d}), sb = gpu->empty(DType::BF16, {rows, d});
  EXPECT_EQ(gpu->matmul_input_dtype(yb), DType::BF16);
  EXPECT_EQ(gpu->matmul_input_dtype(y.gpu), DType::F32);
  cpu->rms_norm(x.cpu, w.cpu, 1e-5f, y.cpu);
  gpu->rms_norm(x.gpu, w.gpu, 1e-5f, yb);
  const std::vector<float> y_ref = rounded(host(*cpu, y.cpu)), y_got = bf16_host(yb);
  EXPECT_LT(relative_difference(y_ref, y_got), 1e-2) << "rms_norm into bf16";  // at most one bf16 step apart
  Pair s = zeros({rows, d});
  cpu->swiglu(x.cpu, up.cpu, s.cpu);
  gpu->swiglu(x.gpu, up.gpu, sb);
  EXPECT_LT(relative_difference(rounded(host(*cpu, s.cpu)), bf16_host(sb)), 1e-2) << "swiglu into bf16";
  // The product over the bf16 norm output as given, against the CPU's f32 product of the same values.
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> w_bits((size_t)m * d);
  std::vector<float> w_vals(w_bits.size());
  for (size_t i = 0; i < w_bits.size(); ++i) w_bits[i] = f32_to_bf16(normal(rng)), w_vals[i] = bf16_to_f32(w_bits[i]);
  Tensor wb = gpu->empty(DType::BF16, {m, d});
  gpu->copy_from_host(wb, w_bits.data(), w_bits.size() * 2);
  Pair xs = upload(y_got, {rows, d}), ws = upload(w_vals, {m, d}), prod = zeros({rows, m});
  cpu->matmul_nt(xs.cpu, ws.cpu, prod.cpu);
  gpu->matmul_nt(yb, wb, prod.gpu);
  EXPECT_LT(relative_diff(prod), 1e-5) << "bf16 x";
  Pair prod2 = zeros({rows, m});
  gpu->matmul_nt_many(yb, {&wb, &wb}, {&prod.gpu, &prod2.gpu});
  EXPECT_LT(relative_difference(host(*cpu, prod.cpu), host(*gpu, prod2.gpu)), 1e-5) << "bf16 x, two products";
  // bf16 products (gate and up), then SwiGLU from them in place: the f32 results rounded, then SwiGLU of those.
  Tensor gate = gpu->empty(DType::BF16, {rows, m}), up_b = gpu->empty(DType::BF16, {rows, m});
  gpu->matmul_nt_many(yb, {&wb, &wb}, {&gate, &up_b});
  const std::vector<float> gate_ref = rounded(host(*cpu, prod.cpu)), gate_got = bf16_host(gate);
  EXPECT_LT(relative_difference(gate_ref, gate_got), 1e-2) << "bf16 y";
  Pair g = upload(gate_got, {rows, m}), silu = zeros({rows, m});
  cpu->swiglu(g.cpu, g.cpu, silu.cpu);
  gpu->swiglu(gate, up_b, gate);
  EXPECT_LT(relative_difference(rounded(host(*cpu, silu.cpu)), bf16_host(gate)), 1e-2) << "swiglu from bf16";
}

// Q, K and V with their biases added in the GEMM's epilogue (K without one, as a bias may be missing): the CPU's
// products of the same bf16 values, then add_bias; and one product alone.
TEST_F(CudaVsCpu, MatmulBiasInTheEpilogue) {
  const int64_t rows = 37, d = 256;
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto bf16_values = [&](int64_t count) {
    std::vector<float> v((size_t)count);
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(normal(rng)));
    return v;
  };
  const auto bf16_weight = [&](const std::vector<float>& v, int64_t m) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) bits[i] = f32_to_bf16(v[i]);
    Tensor w = gpu->empty(DType::BF16, {m, d});
    gpu->copy_from_host(w, bits.data(), bits.size() * 2);
    return w;
  };
  const std::vector<int64_t> widths = {192, 64, 64};
  const Pair x = upload(bf16_values(rows * d), {rows, d});
  std::vector<Pair> ws, biases, ys;
  std::vector<Tensor> wb;
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::vector<float> w = bf16_values(widths[i] * d);
    ws.push_back(upload(w, {widths[i], d}));
    wb.push_back(bf16_weight(w, widths[i]));
    biases.push_back(random({widths[i]}, 30 + (uint32_t)i));
    ys.push_back(zeros({rows, widths[i]}));
  }
  gpu->matmul_nt_many_bias(x.gpu, {&wb[0], &wb[1], &wb[2]}, {&biases[0].gpu, nullptr, &biases[2].gpu},
                           {&ys[0].gpu, &ys[1].gpu, &ys[2].gpu});
  for (size_t i = 0; i < widths.size(); ++i) {
    cpu->matmul_nt(x.cpu, ws[i].cpu, ys[i].cpu);
    if (i != 1) cpu->add_bias(ys[i].cpu, biases[i].cpu);
    EXPECT_LT(relative_diff(ys[i]), 1e-5) << "product " << i;
  }
  Pair alone = zeros({rows, widths[0]});
  cpu->copy(ys[0].cpu, alone.cpu);
  gpu->matmul_nt_many_bias(x.gpu, {&wb[0]}, {&biases[0].gpu}, {&alone.gpu});
  EXPECT_LT(relative_diff(alone), 1e-5) << "one product";
}

// SwiGLU over bf16 gate and up whose count is a multiple of 8 (eight values per thread), into f32 and into bf16:
// the CPU's SwiGLU of the same values.
TEST_F(CudaVsCpu, SwigluFromBf16EightAtATime) {
  const int rows = 5, d = 1024;
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const auto bf16_pair = [&] {
    std::vector<uint16_t> bits((size_t)rows * d);
    std::vector<float> vals(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = f32_to_bf16(normal(rng)), vals[i] = bf16_to_f32(bits[i]);
    Tensor t = gpu->empty(DType::BF16, {rows, d});
    gpu->copy_from_host(t, bits.data(), bits.size() * 2);
    return std::pair{t, upload(vals, {rows, d})};
  };
  auto [gate, gate_f] = bf16_pair();
  auto [up, up_f] = bf16_pair();
  Pair out = zeros({rows, d});
  cpu->swiglu(gate_f.cpu, up_f.cpu, out.cpu);
  gpu->swiglu(gate, up, out.gpu);
  EXPECT_LT(relative_diff(out), 1e-6) << "into f32";
  Tensor out_b = gpu->empty(DType::BF16, {rows, d});
  gpu->swiglu(gate, up, out_b);
  std::vector<uint16_t> bits((size_t)rows * d);
  gpu->copy_to_host(out_b, bits.data(), bits.size() * 2);
  const std::vector<float> ref = host(*cpu, out.cpu);
  for (size_t i = 0; i < bits.size(); ++i)  // rounded to nearest: within half a bf16 step (2^-9 relative)
    ASSERT_LE(std::fabs(bf16_to_f32(bits[i]) - ref[i]), std::fabs(ref[i]) * 0x1p-8f + 1e-30f)
        << "into bf16, value " << i;
}

TEST_F(CudaVsCpu, GathersAndEmbedding) {
  Pair table = random({97, 48}, 6), out = zeros({6, 48});
  const Pair ids = ints({3, 0, 96, 3, 50, 1});
  cpu->embedding(table.cpu, ids.cpu, out.cpu);
  gpu->embedding(table.gpu, ids.gpu, out.gpu);
  EXPECT_EQ(relative_diff(out), 0.0);
  Pair gathered = zeros({6, 48});
  cpu->gather_rows(table.cpu, ids.cpu, gathered.cpu);
  gpu->gather_rows(table.gpu, ids.gpu, gathered.gpu);
  EXPECT_EQ(relative_diff(gathered), 0.0);
  // Indices are checked on the device: the error surfaces at the next read back, naming the id.
  Pair one_row = zeros({1, 48});
  gpu->embedding(table.gpu, ints({97}).gpu, one_row.gpu);
  const std::string err = test::error_of([&] { host(*gpu, one_row.gpu); });
  EXPECT_NE(err.find("token id 97"), std::string::npos) << err;
  EXPECT_NO_THROW(host(*gpu, one_row.gpu)) << "the error is reported once";
  Pair two_rows = zeros({2, 48});
  gpu->gather_rows(table.gpu, ints({0, -1}).gpu, two_rows.gpu);
  EXPECT_NE(test::error_of([&] { host(*gpu, two_rows.gpu); }).find("row -1 at index 1"), std::string::npos);
}

// gather_many in one launch: tens of sources (a probe layer's view of placed chunks) by row lists and whole,
// given out of order, with gaps between them; against the CPU's gathers, gaps and positions included, bit for bit.
// A listed row outside its source is reported at the next read-back.
TEST_F(CudaVsCpu, GatherManyInOneLaunch) {
  const int64_t width = 4 * 64;  // 4 KV heads of 64
  std::vector<Pair> ks, vs, rows, pos;
  std::vector<RowGather> on_cpu, on_gpu;
  int64_t at = 3;  // rows 0-2 are no gather's
  for (int s = 0; s < 40; ++s) {
    const int64_t src_rows = 5 + s % 7, count = s % 3 == 0 ? src_rows : 1 + s % 4;
    ks.push_back(random({src_rows, 4, 64}, 100 + s));
    vs.push_back(random({src_rows, 4, 64}, 200 + s));
    std::vector<int32_t> listed, positions;
    for (int64_t i = 0; i < count; ++i) listed.push_back((int32_t)((i * 3 + s) % src_rows));
    for (int64_t i = 0; i < count; ++i) positions.push_back((int32_t)(1000 * s + i));
    rows.push_back(ints(listed));
    pos.push_back(ints(positions));
    const bool whole = s % 5 == 0;  // its first `count` rows, no list
    on_cpu.push_back({ks[s].cpu, vs[s].cpu, whole ? Tensor() : rows[s].cpu, pos[s].cpu, at, count});
    on_gpu.push_back({ks[s].gpu, vs[s].gpu, whole ? Tensor() : rows[s].gpu, pos[s].gpu, at, count});
    at += count + s % 2;  // a one-row gap after every other source
  }
  std::reverse(on_gpu.begin(), on_gpu.end());  // the order given does not matter
  Pair k = upload(std::vector<float>((size_t)(at * width), 7.0f), {at, 4, 64}), v = zeros({at, 4, 64});
  Pair k_pos = ints(std::vector<int32_t>((size_t)at, -1));
  cpu->gather_many(on_cpu, k.cpu, v.cpu, &k_pos.cpu);
  gpu->gather_many(on_gpu, k.gpu, v.gpu, &k_pos.gpu);
  EXPECT_EQ(host(*gpu, k.gpu), host(*cpu, k.cpu));
  EXPECT_EQ(host(*gpu, v.gpu), host(*cpu, v.cpu));
  std::vector<int32_t> pos_gpu((size_t)at), pos_cpu((size_t)at);
  gpu->copy_to_host(k_pos.gpu, pos_gpu.data(), pos_gpu.size() * 4);
  cpu->copy_to_host(k_pos.cpu, pos_cpu.data(), pos_cpu.size() * 4);
  EXPECT_EQ(pos_gpu, pos_cpu);
  const Pair bad = ints({0, 5});
  gpu->gather_many({{ks[0].gpu, vs[0].gpu, bad.gpu, pos[0].gpu, 0, 2}}, k.gpu, v.gpu, nullptr);
  EXPECT_NE(test::error_of([&] { host(*gpu, k.gpu); }).find("row 5 at index 1"), std::string::npos);
}

// The fast mode's GEMM: bf16 weights through cuBLASLt against the CPU's f32 product of the same bf16-rounded
// values (the products are exact in f32; only the order of the sums differs).
TEST_F(CudaVsCpu, MatmulBf16WeightsAndEmbedding) {
  for (auto [n, m, k] : {std::tuple{1, 7, 8}, {3, 576, 576}, {64, 1536, 576}, {129, 4864, 896}, {700, 256, 3584}}) {
    Bf16Product p = bf16_product(n, m, k);
    cpu->matmul_nt(p.x.cpu, p.w.cpu, p.y.cpu);
    gpu->matmul_nt(p.x.gpu, p.w_bf16, p.y.gpu);
    EXPECT_LT(relative_diff(p.y), 1e-5) << n << "x" << m << "x" << k;
    if (m >= 7) {
      const Pair ids = ints({0, m - 1, 3});
      Pair out = zeros({3, k});
      cpu->embedding(p.w.cpu, ids.cpu, out.cpu);
      gpu->embedding(p.w_bf16, ids.gpu, out.gpu);
      EXPECT_EQ(relative_diff(out), 0.0) << "bf16 embedding";
    }
  }
}

// KVF_GEMM_TUNE=1: a thin product times cuBLASLt's candidate algorithms on its first call and keeps the fastest.
// The timing call and later calls all give the CPU's product of the same bf16 values, the later ones bit for bit
// the same. Shapes of the 7B model's selection pass (37 question rows) and of decoding (1 row), and products of
// 128 rows (the most that are tuned) and 129.
TEST_F(CudaVsCpu, TunedThinMatmulBf16) {
  const ScopedEnv tune("KVF_GEMM_TUNE", "1");
  for (auto [n, m, k] : {std::tuple{1, 3584, 3584}, {37, 3584, 18944}, {37, 18944, 3584}, {128, 512, 896},
                         {129, 256, 512}}) {
    Bf16Product p = bf16_product(n, m, k);
    cpu->matmul_nt(p.x.cpu, p.w.cpu, p.y.cpu);
    gpu->matmul_nt(p.x.gpu, p.w_bf16, p.y.gpu);  // times the candidates, then computes with the fastest
    EXPECT_LT(relative_diff(p.y), 1e-5) << n << "x" << m << "x" << k;
    const std::vector<float> first = host(*gpu, p.y.gpu);
    for (int again = 0; again < 2; ++again) {
      gpu->matmul_nt(p.x.gpu, p.w_bf16, p.y.gpu);
      EXPECT_EQ(host(*gpu, p.y.gpu), first) << n << "x" << m << "x" << k << ", call " << again + 2;
    }
  }
}

TEST_F(CudaVsCpu, RopeBothPairingsForwardAndInverse) {
  const std::vector<int32_t> positions = {0, 1, 7, 511, 4096, 100000, 3};
  for (RopePairing pairing : {RopePairing::Adjacent, RopePairing::HalfSplit})
    for (int rotary : {64, 32}) {
      RopeSpec spec;
      spec.rotary_dim = rotary;
      spec.pairing = pairing;
      spec.inv_freq = std::make_shared<const std::vector<float>>(rope_inv_frequencies(rotary, 10000.0, 1.0, {}));
      for (bool inverse : {false, true}) {
        Pair x = random({(int64_t)positions.size(), 3, 64}, 7);
        const Pair pos = ints(positions);
        cpu->rope_inplace(x.cpu, pos.cpu, spec, inverse);
        gpu->rope_inplace(x.gpu, pos.gpu, spec, inverse);
        EXPECT_LT(relative_diff(x), 1e-6) << "rotary " << rotary << " inverse " << inverse;
      }
    }
}

// A rotated copy of four layers of seven rows in one call, the positions repeating per layer: the source is left
// as it was, and the dims past a partial rotary_dim are copied.
TEST_F(CudaVsCpu, RopeIntoRepeatsThePositionsPerLayer) {
  const std::vector<int32_t> positions = {0, 1, 7, 511, 4096, 100000, 3};
  for (int rotary : {64, 32}) {
    RopeSpec spec;
    spec.rotary_dim = rotary;
    spec.inv_freq = std::make_shared<const std::vector<float>>(rope_inv_frequencies(rotary, 10000.0, 1.0, {}));
    const Pair src = random({4 * (int64_t)positions.size(), 3, 64}, 8), pos = ints(positions);
    Pair dst = zeros(src.cpu.shape);
    const std::vector<float> before = host(*gpu, src.gpu);
    cpu->rope_into(src.cpu, dst.cpu, pos.cpu, spec);
    gpu->rope_into(src.gpu, dst.gpu, pos.gpu, spec);
    EXPECT_LT(relative_diff(dst), 1e-6) << "rotary " << rotary;
    EXPECT_EQ(host(*gpu, src.gpu), before) << "the source is not rotated";
    // Layer 2 equals its rows rotated alone.
    const int64_t n = (int64_t)positions.size();
    Pair layer = zeros({n, 3, 64});
    gpu->copy(src.gpu.rows(2 * n, n), layer.gpu);
    gpu->rope_inplace(layer.gpu, pos.gpu, spec);
    EXPECT_EQ(host(*gpu, layer.gpu), host(*gpu, dst.gpu.rows(2 * n, n)));
  }
}

struct AttentionCase {
  int n, m, heads, kv_heads, head_dim;
  bool shuffled_keys;
};

TEST_F(CudaVsCpu, AttentionByPositionWithGqaAndProbes) {
  using Case = AttentionCase;
  // The last two have few rows over many keys: the f32 kernel splits the keys over blocks and merges them.
  for (const Case c : {Case{1, 1, 4, 2, 64, false}, Case{5, 300, 9, 3, 64, false}, Case{40, 40, 8, 8, 128, true},
                       Case{17, 1000, 28, 4, 128, true}, Case{3, 9, 2, 1, 32, false}, Case{1, 5000, 28, 4, 128, false},
                       Case{3, 20000, 14, 2, 64, true}}) {
    std::mt19937 rng(c.n * 31 + c.m);
    std::vector<int32_t> k_pos(c.m), q_pos(c.n);
    for (int j = 0; j < c.m; ++j) k_pos[j] = j;
    if (c.shuffled_keys) std::shuffle(k_pos.begin(), k_pos.end(), rng);
    // Queries after, inside and before the keys (the first sees no key at all when its position is -1).
    for (int i = 0; i < c.n; ++i) q_pos[i] = i == 0 && c.n > 2 ? -1 : (int32_t)(rng() % (c.m + 5));
    AttentionPairs p{random({c.n, c.heads, c.head_dim}, 8),  ints(q_pos),
                     random({c.m, c.kv_heads, c.head_dim}, 9), random({c.m, c.kv_heads, c.head_dim}, 10),
                     ints(k_pos),                              zeros({c.n, c.heads, c.head_dim}),
                     ints({c.n - 1, 0}),                       zeros({c.m})};
    for (bool on_gpu : {false, true}) attend(on_gpu, p, c.head_dim, false);
    EXPECT_LT(relative_diff(p.out), 1e-5) << c.n << " rows over " << c.m << " keys";
    EXPECT_LT(relative_diff(p.colsum), 1e-5) << "probe column sums";
  }
  // A probe row listed twice counts once; a probe row outside the rows is reported at the next read-back.
  std::vector<int32_t> k_pos(300);
  for (int j = 0; j < 300; ++j) k_pos[j] = j;
  AttentionPairs p{random({6, 28, 128}, 11), ints({0, 70, 140, 210, 280, 299}), random({300, 4, 128}, 12),
                   random({300, 4, 128}, 13), ints(k_pos),  zeros({6, 28, 128}),
                   ints({5, 2, 5, 1}),        zeros({300})};
  for (bool on_gpu : {false, true}) attend(on_gpu, p, 128, false);
  EXPECT_LT(relative_diff(p.colsum), 1e-5) << "probe column sums, a row listed twice";
  p.probe_rows = ints({1, 6});  // row 6 of 6
  attend(true, p, 128, false);
  try {
    host(*gpu, p.colsum.gpu);
    FAIL() << "a probe row outside the rows was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("probe row 6"), std::string::npos) << e.what();
  }
}

// The tensor-core Q-index kernel (the fast mode, bf16 Q, K, V and softmax weights) against the CPU's f32 attention
// of the same bf16-rounded inputs: rows scattered over the keys' positions, rows that see no key, tiles that are
// partly past a row, shuffled keys, GQA, both supported head sizes, sizes off the 64- and 128-row and 64-key
// tiles, in both forms of the kernel (16 and 32 rows per warp). Its probe column sums must repeat bit for bit.
TEST_F(CudaVsCpu, TensorCoreAttentionByPosition) {
  for (const char* form : {"16", "32"}) {
    SCOPED_TRACE(std::string("rows per warp ") + form);
    const ScopedEnv force("KVF_FLASH_WARP_ROWS", form);
    using Case = AttentionCase;
    for (const Case c : {Case{16, 16, 4, 2, 64, false}, Case{64, 64, 8, 8, 128, false},
                         Case{100, 1000, 28, 4, 128, true}, Case{700, 3000, 14, 2, 64, false},
                         Case{257, 4097, 28, 4, 128, false},
                         Case{20, 20000, 4, 2, 128, false}}) {  // the last: few rows, the keys split over blocks
      std::mt19937 rng(c.n * 7 + c.m);
      std::vector<int32_t> k_pos(c.m), q_pos(c.n);
      for (int j = 0; j < c.m; ++j) k_pos[j] = j;
      if (c.shuffled_keys) std::shuffle(k_pos.begin(), k_pos.end(), rng);
      for (int i = 0; i < c.n; ++i) q_pos[i] = i < 3 ? i - 1 : (int32_t)(rng() % (c.m + 5));
      std::sort(q_pos.begin() + 3, q_pos.end());  // a recompute set is ordered by position; the first rows are not
      const auto rounded = [&](const Shape& shape, float scale) {
        std::normal_distribution<float> d(0.0f, scale);
        int64_t count = 1;
        for (int64_t x : shape) count *= x;
        std::vector<float> v((size_t)count);
        for (float& x : v) x = bf16_to_f32(f32_to_bf16(d(rng)));
        return upload(v, shape);
      };
      AttentionPairs p{rounded({c.n, c.heads, c.head_dim}, 1.0f),  ints(q_pos),
                       rounded({c.m, c.kv_heads, c.head_dim}, 1.0f), rounded({c.m, c.kv_heads, c.head_dim}, 1.0f),
                       ints(k_pos),                                  zeros({c.n, c.heads, c.head_dim}),
                       ints({c.n - 1, c.n / 2, 0}),                  zeros({c.m})};
      attend(false, p, c.head_dim, false);  // the CPU computes the rounded inputs in f32: the reference
      std::vector<float> first_colsum;
      for (int run = 0; run < 3; ++run) {
        gpu->copy_from_host(p.colsum.gpu, std::vector<float>(c.m, 0.0f).data(), c.m * 4);
        attend(true, p, c.head_dim, true);
        if (run == 0) {
          first_colsum = host(*gpu, p.colsum.gpu);
        } else {
          EXPECT_EQ(host(*gpu, p.colsum.gpu), first_colsum) << "probe sums repeat, run " << run;
        }
      }
      // P is rounded to bf16 before P·V: about 3 significant digits.
      EXPECT_LT(relative_diff(p.out), 2e-2) << c.n << " rows over " << c.m << " keys, head_dim " << c.head_dim;
      const std::vector<float> out = host(*gpu, p.out.gpu);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_TRUE(std::isfinite(out[i])) << "output " << i;
      for (int64_t d = 0; d < (int64_t)c.heads * c.head_dim; ++d)  // row 0 sits at position -1: it reads no key
        ASSERT_EQ(out[d], 0.0f) << "row 0, value " << d;
      EXPECT_LT(relative_diff(p.colsum), 1e-4) << "probe column sums";
    }
  }
}

// attention_blocks in the fast mode: the view's blocks (whole, by row lists, empty) staged into one bf16 K/V in a
// single launch, then the tensor-core kernel; against the CPU's f32 attention over the same bf16-rounded blocks.
// A row list that leaves its block is reported at the next read-back.
TEST_F(CudaVsCpu, TensorCoreAttentionOverBlocks) {
  const int n = 70, heads = 8, kv_heads = 2, head_dim = 64;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto rounded = [&](int64_t rows) {
    std::vector<float> v((size_t)(rows * kv_heads * head_dim));
    for (float& x : v) x = bf16_to_f32(f32_to_bf16(normal(rng)));
    return upload(v, {rows, kv_heads, head_dim});
  };
  // Blocks of 300, 50 (rows 49, 0, 7 of them), 0 (5 rows, none read), 120 (every other row) rows.
  struct Source {
    int64_t rows;
    std::vector<int32_t> read;  // empty: all
    bool none = false;
  };
  const std::vector<Source> sources{{300, {}}, {50, {49, 0, 7}}, {5, {}, true}, {120, {}}};
  std::vector<Pair> ks, vs, row_lists, positions;
  std::vector<KeyBlock> cpu_blocks, gpu_blocks;
  int32_t next_pos = 0;
  for (const Source& src : sources) {
    ks.push_back(rounded(src.rows));
    vs.push_back(rounded(src.rows));
    std::vector<int32_t> read = src.read;
    if (src.rows == 120)
      for (int32_t r = 0; r < 120; r += 2) read.push_back(r);
    const int64_t count = src.none ? 0 : read.empty() ? src.rows : (int64_t)read.size();
    std::vector<int32_t> pos((size_t)count);
    for (int32_t& x : pos) x = next_pos++;
    positions.push_back(ints(pos));
    KeyBlock c{ks.back().cpu, vs.back().cpu, Tensor(), positions.back().cpu};
    KeyBlock g{ks.back().gpu, vs.back().gpu, Tensor(), positions.back().gpu};
    if (src.none || !read.empty()) {
      row_lists.push_back(ints(src.none ? std::vector<int32_t>{} : read));
      c.rows = row_lists.back().cpu, g.rows = row_lists.back().gpu;
    }
    cpu_blocks.push_back(c), gpu_blocks.push_back(g);
  }
  std::vector<int32_t> q_pos(n);
  for (int i = 0; i < n; ++i) q_pos[i] = i == 0 ? -1 : (int32_t)(rng() % (next_pos + 3));
  std::sort(q_pos.begin(), q_pos.end());
  std::vector<float> q((size_t)(n * heads * head_dim));
  for (float& x : q) x = bf16_to_f32(f32_to_bf16(normal(rng)));
  const Pair qp = upload(q, {n, heads, head_dim}), qpos = ints(q_pos), out = zeros({n, heads, head_dim});
  const auto args = [&](bool on_gpu) {
    BlockAttentionArgs a;
    a.q = on_gpu ? qp.gpu : qp.cpu, a.q_pos = on_gpu ? qpos.gpu : qpos.cpu, a.out = on_gpu ? out.gpu : out.cpu;
    a.blocks = on_gpu ? gpu_blocks : cpu_blocks;
    a.scale = 1.0f / std::sqrt((float)head_dim);
    a.bf16_inputs = on_gpu;  // the CPU computes the rounded inputs in f32: the reference
    return a;
  };
  cpu->attention_blocks(args(false));
  gpu->attention_blocks(args(true));
  EXPECT_LT(relative_diff(out), 2e-2);
  const std::vector<float> got = host(*gpu, out.gpu);
  for (int64_t d = 0; d < heads * head_dim; ++d) ASSERT_EQ(got[(size_t)d], 0.0f) << "row 0 reads no key, value " << d;

  const Pair bad = ints({49, 50, 0});  // row 50 of a 50-row block
  BlockAttentionArgs a = args(true);
  a.blocks[1].rows = bad.gpu;
  gpu->attention_blocks(a);
  try {
    host(*gpu, out.gpu);
    FAIL() << "a row outside its block was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 50"), std::string::npos) << e.what();
  }
}

// attention_blocks_many: sequences of a ragged batch (their own rows, blocks and positions) through the
// tensor-core kernel in one launch where together they fill the GPU, a short one on the portable path; each
// against the CPU's f32 attention of the same bf16-rounded inputs, and against its own attention_blocks call.
TEST_F(CudaVsCpu, TensorCoreAttentionOverManySequences) {
  for (const char* form : {"16", "32"}) {
    SCOPED_TRACE(std::string("rows per warp ") + form);
    const ScopedEnv force("KVF_FLASH_WARP_ROWS", form);
    const int heads = 32, kv_heads = 4, head_dim = 64;
    struct Shape2 {
      int64_t rows, keys;
    };
    const std::vector<Shape2> shapes{{640, 1500}, {130, 900}, {40, 3000}, {5, 300}};  // the last: few rows
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto rounded = [&](int64_t rows, int64_t width) {
      std::vector<float> v((size_t)(rows * width * head_dim));
      for (float& x : v) x = bf16_to_f32(f32_to_bf16(normal(rng)));
      return upload(v, {rows, width, head_dim});
    };
    std::vector<Pair> keep;  // every tensor the arguments point at (reserved: references into it stay valid)
    keep.reserve(16 * shapes.size());
    std::vector<BlockAttentionArgs> cpu_seqs, gpu_seqs;
    std::vector<Pair> outs;
    for (const Shape2& sh : shapes) {
      // Two blocks: the first half of the keys whole, then every other row of a second source.
      const int64_t whole = sh.keys / 2, listed = sh.keys - whole;
      keep.push_back(rounded(whole, kv_heads));
      keep.push_back(rounded(whole, kv_heads));
      KeyBlock c0{keep[keep.size() - 2].cpu, keep.back().cpu, Tensor(), Tensor()};
      KeyBlock g0{keep[keep.size() - 2].gpu, keep.back().gpu, Tensor(), Tensor()};
      keep.push_back(rounded(2 * listed, kv_heads));
      keep.push_back(rounded(2 * listed, kv_heads));
      KeyBlock c1{keep[keep.size() - 2].cpu, keep.back().cpu, Tensor(), Tensor()};
      KeyBlock g1{keep[keep.size() - 2].gpu, keep.back().gpu, Tensor(), Tensor()};
      std::vector<int32_t> every_other((size_t)listed), pos0((size_t)whole), pos1((size_t)listed);
      for (int64_t i = 0; i < listed; ++i) every_other[(size_t)i] = (int32_t)(2 * i);
      std::iota(pos0.begin(), pos0.end(), 0);
      std::iota(pos1.begin(), pos1.end(), (int32_t)whole);
      keep.push_back(ints(every_other));
      c1.rows = keep.back().cpu, g1.rows = keep.back().gpu;
      keep.push_back(ints(pos0));
      c0.pos = keep.back().cpu, g0.pos = keep.back().gpu;
      keep.push_back(ints(pos1));
      c1.pos = keep.back().cpu, g1.pos = keep.back().gpu;
      std::vector<int32_t> q_pos((size_t)sh.rows);
      for (int32_t& p : q_pos) p = (int32_t)(rng() % (sh.keys + 3)) - 1;  // -1: a row that reads no key
      keep.push_back(rounded(sh.rows, heads));
      const Pair& q = keep.back();
      keep.push_back(ints(q_pos));
      const Pair& qp = keep.back();
      outs.push_back(zeros({sh.rows, heads, head_dim}));
      BlockAttentionArgs c, g;
      c.q = q.cpu, c.q_pos = qp.cpu, c.out = outs.back().cpu, c.blocks = {c0, c1};
      g.q = q.gpu, g.q_pos = qp.gpu, g.out = outs.back().gpu, g.blocks = {g0, g1};
      c.scale = g.scale = 1.0f / std::sqrt((float)head_dim);
      g.bf16_inputs = true;  // the CPU computes the rounded inputs in f32: the reference
      cpu_seqs.push_back(c), gpu_seqs.push_back(g);
    }
    cpu->attention_blocks_many(cpu_seqs);
    gpu->attention_blocks_many(gpu_seqs);
    std::vector<std::vector<float>> together;
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_LT(relative_diff(outs[i]), 2e-2) << "sequence " << i;
      together.push_back(host(*gpu, outs[i].gpu));
    }
    // Alone, the first sequence fills the GPU without a key split: the same kernel work, so the same bits.
    gpu->attention_blocks(gpu_seqs[0]);
    EXPECT_EQ(host(*gpu, outs[0].gpu), together[0]);
  }
}

// The same forward request on both backends: a stored view, computed tokens at scattered positions (two of them
// superseding stored rows), a probe. Logits and KV within `tol` of the largest CPU value.
// The CPU computes in f32 (the reference); the GPU in `gpu_mode`.
void expect_same_forward(Backend& cpu, Backend& gpu, const std::string& path, double tol, const std::string& what,
                         ComputeMode gpu_mode = ComputeMode::F32) {
  const auto cpu_decoder = Decoder::load(path, cpu, ComputeMode::F32);
  const auto gpu_decoder = Decoder::load(path, gpu, gpu_mode);
  const int vocab = cpu_decoder->config().vocab;
  ForwardRequest base;
  base.tokens = test::random_tokens(40, vocab, 11);
  base.positions = test::iota_positions(40);
  base.return_kv = true;
  const ForwardResult cpu_base = cpu_decoder->forward(base), gpu_base = gpu_decoder->forward(base);
  ForwardRequest next;
  next.tokens = test::random_tokens(9, vocab, 12);
  next.positions = {3, 5, 40, 41, 42, 43, 44, 45, 46};
  next.logit_rows = test::iota_positions(9);
  next.return_kv = true;
  next.probe_layers = {1};
  next.probe_rows = {7, 8};
  ForwardRequest cpu_next = next, gpu_next = next;
  cpu_next.view = {&cpu_base.kv};
  gpu_next.view = {&gpu_base.kv};
  const ForwardResult a = cpu_decoder->forward(cpu_next), b = gpu_decoder->forward(gpu_next);
  EXPECT_LT(relative_difference(a.logits, b.logits), tol) << what << " logits";
  EXPECT_LT(relative_difference(a.attn_colsum[0], b.attn_colsum[0]), tol) << what << " probe column sums";
  for (size_t l = 0; l < a.kv.k.size(); ++l) {
    EXPECT_LT(relative_difference(host(cpu, a.kv.k[l]), host(gpu, b.kv.k[l])), tol) << what << " K of layer " << l;
    EXPECT_LT(relative_difference(host(cpu, a.kv.v[l]), host(gpu, b.kv.v[l])), tol) << what << " V of layer " << l;
  }
}

TEST_F(CudaVsCpu, TinyModelLogitsAndKv) {
  for (const char* arch : {"llama", "qwen2"}) {
    test::TinyModelSpec spec;
    spec.arch = arch;
    expect_same_forward(*cpu, *gpu, test::write_tiny_model(spec), 1e-5, arch);
  }
}

// Two layers of SmolLM2-135M's and of Qwen2.5-7B's shapes (random bf16 weights; the 7B's vocabulary cut to 32,768
// rows to keep the file near 1 GB): the head sizes, GQA ratios and long rows of the real models.
TEST_F(CudaVsCpu, RealShapeModelsLogitsAndKv) {
  for (const char* shape : {"smollm2-135m", "qwen2.5-7b"}) {
    test::TinyModelSpec spec = real_model_shape(shape);
    spec.n_layers = 2;
    spec.vocab = std::min(spec.vocab, 32768);
    expect_same_forward(*cpu, *gpu, test::write_tiny_model(spec), 1e-4, shape);
  }
}

// The fast mode on the GPU (bf16 weights as stored, bf16 GEMM inputs, the tensor-core attention for the 40-token
// prefill) against the CPU's f32 reference: within bf16 rounding.
TEST_F(CudaVsCpu, FastModeRealShapeModels) {
  for (const char* shape : {"smollm2-135m", "qwen2.5-7b"}) {
    test::TinyModelSpec spec = real_model_shape(shape);
    spec.n_layers = 2;
    spec.vocab = std::min(spec.vocab, 32768);
    expect_same_forward(*cpu, *gpu, test::write_tiny_model(spec), 5e-2, std::string(shape) + " fast",
                        ComputeMode::Fast);
  }
}

// The loading lane (a second stream): an upload large enough to pass through the pinned staging buffers in several
// pieces, a reorder on the lane, then, once the lane is synchronised, read and freed by the backend's own work;
// a bad row met on the lane is reported by its synchronize().
TEST_F(CudaVsCpu, LoadingLaneUploadsBesideTheBackendsWork) {
  Backend& lane = gpu->loading_lane();
  ASSERT_NE(&lane, gpu.get());
  EXPECT_EQ(&lane, &gpu->loading_lane()) << "one lane per backend";
  const int64_t rows = 5000, width = 1030;  // 20.6 MB: three pieces of the 8 MiB staging buffers, the last short
  std::vector<float> values((size_t)(rows * width));
  for (size_t i = 0; i < values.size(); ++i) values[i] = (float)(i % 9973) - 0.5f * (float)(i % 7);
  std::vector<int32_t> reversed((size_t)rows);
  for (int64_t r = 0; r < rows; ++r) reversed[(size_t)r] = (int32_t)(rows - 1 - r);
  Tensor as_read = lane.empty(DType::F32, {rows, width}), order = lane.empty(DType::I32, {rows});
  Tensor reordered = lane.empty(DType::F32, {rows, width});
  lane.copy_from_host(as_read, values.data(), values.size() * sizeof(float));
  lane.copy_from_host(order, reversed.data(), reversed.size() * sizeof(int32_t));
  lane.gather_rows(as_read, order, reordered);
  lane.synchronize();
  Tensor on_backend = gpu->empty(DType::F32, {rows, width});
  gpu->copy(reordered, on_backend);
  as_read = Tensor(), reordered = Tensor();  // freed in the backend's stream order, after the copy
  const std::vector<float> got = host(*gpu, on_backend);
  for (int64_t r = 0; r < rows; r += 997)
    for (int64_t c = 0; c < width; c += 103)
      ASSERT_EQ(got[(size_t)(r * width + c)], values[(size_t)((rows - 1 - r) * width + c)]) << r << "," << c;
  EXPECT_EQ(got[got.size() - 1], values[(size_t)(width - 1)]);

  const std::vector<int32_t> bad{0, 7, (int32_t)rows + 2};
  Tensor bad_rows = lane.empty(DType::I32, {3}), three = lane.empty(DType::F32, {3, width});
  lane.copy_from_host(bad_rows, bad.data(), bad.size() * sizeof(int32_t));
  lane.gather_rows(on_backend, bad_rows, three);
  try {
    lane.synchronize();
    FAIL() << "a bad row on the lane was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 5002"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, SaysWhyItIsMissing) {
  std::string why;
  if (cuda_device_available(&why)) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(why.empty());
  try {
    make_cuda_backend();
    FAIL() << "make_cuda_backend without a device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvf
