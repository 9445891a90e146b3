// CPU backend ops against naive double-precision loops written from their definitions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/flash_attention.h"
#include "backend/cpu/vec_math.h"
#include "model/rope_frequencies.h"
#include "support/test_values.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVF_TEST_ASAN 1
#endif
#endif
#ifndef KVF_TEST_ASAN
#define KVF_TEST_ASAN 0
#endif

namespace kvf {
namespace {

class CpuOps : public ::testing::Test {
 protected:
  Tensor make(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
    Tensor t = b->empty(DType::F32, shape);
    std::normal_distribution<float> d(0.0f, scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    return t;
  }
  Tensor make_i32(const std::vector<int32_t>& v) {
    Tensor t = b->empty(DType::I32, {(int64_t)v.size()});
    b->copy_from_host(t, v.data(), v.size() * 4);
    return t;
  }
  std::unique_ptr<Backend> b = make_cpu_backend();
};

// Tensors of 2 MiB or more start on a huge-page boundary (cpu_backend.cpp; not under AddressSanitizer, which
// checks the allocator's blocks), hold every byte asked for, and views of them share the storage.
TEST_F(CpuOps, LargeHostTensorsStartOnHugePageBoundaries) {
  for (int64_t floats : {int64_t{1} << 19, (int64_t{5} << 20) / 4 + 3}) {
    Tensor t = b->empty(DType::F32, {floats});
#if !defined(__SANITIZE_ADDRESS__) && !KVF_TEST_ASAN
    EXPECT_EQ((uintptr_t)t.data<float>() % (uintptr_t{2} << 20), 0u) << floats << " floats";
#endif
    for (int64_t i = 0; i < floats; ++i) t.data<float>()[i] = (float)(i % 1000);
    const Tensor tail = t.rows(floats - 3, 3);
    EXPECT_EQ(tail.data<float>()[2], (float)((floats - 1) % 1000));
  }
  Tensor small = b->empty(DType::F32, {100});
  EXPECT_EQ((uintptr_t)small.data<float>() % 64, 0u);
}

// gather_many (the portable default): each gather's rows, listed or its first ones, land at their destination
// rows with their positions; rows no gather names keep what they held.
TEST_F(CpuOps, GatherManyFillsEachGathersRowsAndNothingElse) {
  std::mt19937 rng(5);
  const Tensor ka = make({6, 2, 4}, rng), va = make({6, 2, 4}, rng);
  const Tensor kb = make({3, 2, 4}, rng), vb = make({3, 2, 4}, rng);
  Tensor k = b->empty(DType::F32, {9, 2, 4}), v = b->empty(DType::F32, {9, 2, 4});
  Tensor pos = make_i32({-1, -1, -1, -1, -1, -1, -1, -1, -1});
  std::fill_n(k.data<float>(), k.numel(), 7.0f);
  std::fill_n(v.data<float>(), v.numel(), 7.0f);
  // Destination rows 0-1: kb's first two; row 2 untouched; rows 3-5: ka's rows 5, 0, 2; rows 6-8 untouched.
  const std::vector<RowGather> gathers{{ka, va, make_i32({5, 0, 2}), make_i32({50, 51, 52}), 3, 3},
                                       {kb, vb, Tensor(), make_i32({10, 11}), 0, 2}};
  b->gather_many(gathers, k, v, &pos);
  const auto row = [](const Tensor& t, int64_t r) {
    return std::vector<float>(t.data<float>() + r * 8, t.data<float>() + (r + 1) * 8);
  };
  for (auto [dst, src, from_a] : {std::tuple{0, 0, false}, {1, 1, false}, {3, 5, true}, {4, 0, true}, {5, 2, true}}) {
    EXPECT_EQ(row(k, dst), row(from_a ? ka : kb, src)) << "row " << dst;
    EXPECT_EQ(row(v, dst), row(from_a ? va : vb, src)) << "row " << dst;
  }
  for (int64_t untouched : {2, 6, 7, 8}) {
    EXPECT_EQ(row(k, untouched), std::vector<float>(8, 7.0f)) << "row " << untouched;
    EXPECT_EQ(row(v, untouched), std::vector<float>(8, 7.0f)) << "row " << untouched;
  }
  EXPECT_EQ(std::vector<int32_t>(pos.data<int32_t>(), pos.data<int32_t>() + 9),
            (std::vector<int32_t>{10, 11, -1, 50, 51, 52, -1, -1, -1}));
  std::fill_n(k.data<float>(), k.numel(), 7.0f);
  b->gather_many(gathers, k, v, nullptr);  // without a destination of positions, the same rows
  EXPECT_EQ(row(k, 3), row(ka, 5));
  EXPECT_EQ(row(k, 1), row(kb, 1));
}

TEST_F(CpuOps, MatmulMatchesNaive) {
  std::mt19937 rng(1);
  for (auto [n, m, k] : {std::tuple{1, 7, 5}, {33, 100, 64}, {130, 48, 200}}) {
    Tensor x = make({n, k}, rng), w = make({m, k}, rng), y = b->empty(DType::F32, {n, m});
    b->matmul_nt(x, w, y);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) {
        double ref = 0;
        for (int t = 0; t < k; ++t) ref += (double)x.data<float>()[i * k + t] * w.data<float>()[j * k + t];
        ASSERT_NEAR(y.data<float>()[i * m + j], ref, 1e-4 * std::sqrt((double)k)) << n << "x" << m << "x" << k;
      }
  }
}

TEST_F(CpuOps, ExpAndSwigluAreAccurateToAFewUlp) {
  std::vector<float> xs;
  for (float x = -90.0f; x < 88.0f; x += 0.0137f) xs.push_back(x);  // exp(88.7) is past float range
  std::vector<float> e = xs;
  cpu::exp_shift_sum(e.data(), (int64_t)e.size(), 0.0f);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = std::exp((double)xs[i]);
    if (ref < 1e-37) continue;  // below float's normal range the result may flush
    ASSERT_NEAR(e[i], ref, 4e-7 * ref) << "x = " << xs[i];
  }
  std::vector<float> up(xs.size(), 1.5f), out(xs.size());
  cpu::swiglu_row(xs.data(), up.data(), out.data(), (int64_t)xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = xs[i] / (1.0 + std::exp(-(double)xs[i])) * 1.5;
    ASSERT_NEAR(out[i], ref, 1e-6 * std::max(1.0, std::abs(ref))) << "x = " << xs[i];
  }
}

TEST_F(CpuOps, RopeTableAgreesWithDirectComputationAndBeyondIt) {
  std::mt19937 rng(2);
  RopeSpec spec;
  spec.rotary_dim = 16;
  spec.inv_freq = std::make_shared<const std::vector<float>>(rope_inv_frequencies(16, 10000.0, 1.0, {}));
  const std::vector<int32_t> pos{0, 3, 63, 64, 1000};
  Tensor x = make({5, 2, 16}, rng), direct = b->empty(DType::F32, x.shape);
  b->copy(x, direct);
  b->rope_inplace(direct, make_i32(pos), spec, false);  // no table: computed from inv_freq
  spec.cos_sin = std::make_shared<const std::vector<float>>(rope_cos_sin_table(*spec.inv_freq, 64));
  spec.table_positions = 64;
  b->rope_inplace(x, make_i32(pos), spec, false);  // rows 0-2 from the table, 3-4 computed
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.data<float>()[i], direct.data<float>()[i]) << i;
}

// Naive attention by the forward rule: query at p reads keys with position <= p; GQA maps head h to h / group.
void naive_attention(const AttentionArgs& a, std::vector<double>& out, std::vector<double>& colsum,
                     const std::vector<int32_t>& probe_rows) {
  const int64_t n = a.q.dim(0), H = a.q.dim(1), D = a.q.dim(2), m = a.k.dim(0), KV = a.k.dim(1);
  out.assign(n * H * D, 0.0);
  colsum.assign(m, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / KV);
      std::vector<double> w(m, 0.0);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < m; ++j) {
        if (a.k_pos.data<int32_t>()[j] > a.q_pos.data<int32_t>()[i]) continue;
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += (double)a.q.data<float>()[(i * H + h) * D + d] * a.k.data<float>()[(j * KV + g) * D + d];
        w[j] = s * a.scale;
        mx = std::max(mx, w[j]);
      }
      for (int64_t j = 0; j < m; ++j)
        if (a.k_pos.data<int32_t>()[j] <= a.q_pos.data<int32_t>()[i]) sum += (w[j] = std::exp(w[j] - mx));
        else w[j] = 0;
      for (int64_t j = 0; j < m; ++j) {
        const double p = sum > 0 ? w[j] / sum : 0;
        for (int64_t d = 0; d < D; ++d) out[(i * H + h) * D + d] += p * a.v.data<float>()[(j * KV + g) * D + d];
        if (std::find(probe_rows.begin(), probe_rows.end(), i) != probe_rows.end()) colsum[j] += p;
      }
    }
}

TEST_F(CpuOps, AttentionFollowsTheForwardRuleWithGqaAndProbes) {
  std::mt19937 rng(3);
  struct Case {
    int n, m, heads, kv;
    bool sorted;
  };
  for (const Case c : {Case{1, 1, 2, 1, true}, {5, 40, 6, 2, true}, {150, 300, 6, 3, true}, {37, 80, 4, 4, false},
                       {200, 130, 9, 3, false}}) {
    AttentionArgs a;
    a.q = make({c.n, c.heads, 16}, rng);
    a.k = make({c.m, c.kv, 16}, rng);
    a.v = make({c.m, c.kv, 16}, rng);
    a.out = b->empty(DType::F32, {c.n, c.heads, 16});
    a.scale = 0.25f;
    std::vector<int32_t> qpos(c.n), kpos(c.m), probe{0, c.n - 1};
    std::uniform_int_distribution<int32_t> any(0, c.m + c.n);
    for (int j = 0; j < c.m; ++j) kpos[j] = c.sorted ? j : any(rng);
    for (int i = 0; i < c.n; ++i) qpos[i] = c.sorted ? c.m - c.n / 2 + i : any(rng);
    a.q_pos = make_i32(qpos);
    a.k_pos = make_i32(kpos);
    a.probe_rows = make_i32(probe);
    a.probe_colsum = b->empty(DType::F32, {c.m});
    std::fill_n(a.probe_colsum.data<float>(), c.m, 0.0f);
    b->attention(a);
    std::vector<double> ref, colsum;
    naive_attention(a, ref, colsum, probe);
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(a.out.data<float>()[i], ref[i], 2e-5) << "n=" << c.n;
    for (int j = 0; j < c.m; ++j) ASSERT_NEAR(a.probe_colsum.data<float>()[j], colsum[j], 2e-5) << "key " << j;
  }
  AttentionArgs bad;
  bad.q = b->empty(DType::F32, {2, 4, 16});
  bad.k = b->empty(DType::F32, {3, 2, 16});
  bad.v = b->empty(DType::F32, {3, 2, 16});
  bad.out = b->empty(DType::F32, {2, 4, 16});
  bad.q_pos = make_i32({3, 4});
  bad.k_pos = make_i32({0, 1, 2});
  bad.probe_rows = make_i32({1});
  bad.probe_colsum = b->empty(DType::F32, {2, 3});
  EXPECT_THAT(test::error_of([&] { b->attention(bad); }),
              ::testing::HasSubstr("probe_colsum [2, 3] for 3 keys"));
}

// attention_blocks (keys read in place, flash-style, split over spans of keys) against the naive rule over the
// blocks' rows concatenated: row subsets, hidden keys, GQA, rows that see nothing, more keys than one span; and
// the portable default (staging then attention()) on the same calls.
TEST_F(CpuOps, BlockAttentionEqualsAttentionOverTheConcatenatedRows) {
  std::mt19937 rng(5);
  struct Case {
    int n, heads, kv, d;
    std::vector<int> block_rows;  // rows of each block's K/V; every other block reads a subset
  };
  for (const Case& c : {Case{1, 9, 3, 64, {40, 7, 3}}, Case{3, 14, 2, 64, {900, 500, 1}}, Case{16, 4, 4, 16, {70}},
                        Case{2, 6, 3, 128, {33, 12}}}) {
    BlockAttentionArgs a;
    a.q = make({c.n, c.heads, c.d}, rng);
    a.out = b->empty(DType::F32, {c.n, c.heads, c.d});
    a.scale = 1.0f / std::sqrt((float)c.d);
    std::vector<int32_t> all_pos;
    AttentionArgs flat;  // the same keys concatenated, for the naive reference
    std::vector<std::vector<float>> ks, vs;
    int next = 0;
    for (size_t i = 0; i < c.block_rows.size(); ++i) {
      const int rows = c.block_rows[i];
      KeyBlock kb{make({rows, c.kv, c.d}, rng), make({rows, c.kv, c.d}, rng), {}, {}};
      std::vector<int32_t> read, pos;
      for (int r = 0; r < rows; ++r)
        if (i % 2 == 0 || r % 3 != 1) read.push_back(r);
      for (size_t j = 0; j < read.size(); ++j) pos.push_back(next++);
      if (i % 2 == 1) kb.rows = make_i32(read);
      kb.pos = make_i32(pos);
      for (int32_t r : read) {
        ks.emplace_back(kb.k.data<float>() + (int64_t)r * c.kv * c.d, kb.k.data<float>() + (int64_t)(r + 1) * c.kv * c.d);
        vs.emplace_back(kb.v.data<float>() + (int64_t)r * c.kv * c.d, kb.v.data<float>() + (int64_t)(r + 1) * c.kv * c.d);
      }
      all_pos.insert(all_pos.end(), pos.begin(), pos.end());
      a.blocks.push_back(kb);
    }
    // Query 0 sees nothing (position -1), the others cut the keys at different points.
    std::vector<int32_t> qpos(c.n);
    for (int i = 0; i < c.n; ++i) qpos[i] = i == 0 && c.n > 1 ? -1 : next - 1 - i * (next / (2 * c.n));
    a.q_pos = make_i32(qpos);
    const int m = (int)all_pos.size();
    flat.q = a.q;
    flat.q_pos = a.q_pos;
    flat.k = b->empty(DType::F32, {m, c.kv, c.d});
    flat.v = b->empty(DType::F32, {m, c.kv, c.d});
    for (int j = 0; j < m; ++j) {
      std::copy(ks[j].begin(), ks[j].end(), flat.k.data<float>() + (int64_t)j * c.kv * c.d);
      std::copy(vs[j].begin(), vs[j].end(), flat.v.data<float>() + (int64_t)j * c.kv * c.d);
    }
    flat.k_pos = make_i32(all_pos);
    flat.out = a.out;
    flat.scale = a.scale;
    std::vector<double> ref, colsum;
    naive_attention(flat, ref, colsum, {});
    b->attention_blocks(a);
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(a.out.data<float>()[i], ref[i], 2e-5) << "n=" << c.n << " " << i;
    std::fill_n(a.out.data<float>(), a.out.numel(), 7.0f);
    b->Backend::attention_blocks(a);
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(a.out.data<float>()[i], ref[i], 2e-5) << "default " << i;
  }
}

// The fast mode's attention (tiles of keys with an online softmax, f32 sums) against the naive rule: GQA, head sizes
// 64 and 128, unsorted keys, key counts off the 64-key tiles, a row that sees nothing. Its error is the rounding of
// Q, K, the weights and V to bf16 (2^-9 of each value) with AVX-512 BF16, f32 rounding and exp to a few ulp with
// AVX2; a row's result must not depend on the rows computed with it; a probe attached takes the f32 kernel's
// weights and leaves the output as it was.
TEST_F(CpuOps, FastAttentionIsCloseToTheRuleAndIndependentOfItsBatch) {
  if (cpu::fast_flash_kernel(64) == nullptr) GTEST_SKIP() << "this CPU has neither AVX-512 BF16 nor AVX2 and FMA";
  const double bound = cpu::flash_attention_bf16_available(64) ? 1e-4 : 1e-10;  // squared relative error
  std::mt19937 rng(11);
  struct Case {
    int n, m, heads, kv, d;
    bool sorted;
  };
  for (const Case c : {Case{1, 1, 2, 1, 64, true}, {17, 300, 9, 3, 64, true}, {150, 700, 14, 2, 64, true},
                       {37, 130, 4, 4, 128, false}, {40, 70, 6, 3, 64, false}}) {
    AttentionArgs a;
    a.q = make({c.n, c.heads, c.d}, rng);
    a.k = make({c.m, c.kv, c.d}, rng);
    a.v = make({c.m, c.kv, c.d}, rng);
    a.out = b->empty(DType::F32, {c.n, c.heads, c.d});
    a.scale = 1.0f / std::sqrt((float)c.d);
    a.bf16_inputs = true;
    std::vector<int32_t> qpos(c.n), kpos(c.m);
    std::uniform_int_distribution<int32_t> any(0, c.m + c.n);
    for (int j = 0; j < c.m; ++j) kpos[j] = c.sorted ? j : any(rng);
    for (int i = 0; i < c.n; ++i) qpos[i] = c.sorted ? c.m - c.n + i : any(rng);
    if (c.n > 1) qpos[1] = -1;  // sees no key
    a.q_pos = make_i32(qpos);
    a.k_pos = make_i32(kpos);
    b->attention(a);
    std::vector<double> ref, colsum;
    naive_attention(a, ref, colsum, {});
    double err = 0, norm = 0, worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double e = a.out.data<float>()[i] - ref[i];
      err += e * e, norm += ref[i] * ref[i], worst = std::max(worst, std::abs(e));
    }
    EXPECT_LT(err / norm, bound) << "n=" << c.n << " m=" << c.m;
    EXPECT_LT(worst, 0.03) << "n=" << c.n << " m=" << c.m;
    if (c.n > 1) {
      for (int64_t i = 0; i < c.heads * c.d; ++i) ASSERT_EQ(a.out.data<float>()[c.heads * c.d + i], 0.0f);
    }

    // Rows [r0, n) alone give the same bits as within the whole batch.
    const int r0 = c.n / 3;
    AttentionArgs part = a;
    part.q = a.q.rows(r0, c.n - r0);
    part.q_pos = a.q_pos.rows(r0, c.n - r0);
    part.out = b->empty(DType::F32, {c.n - r0, c.heads, c.d});
    b->attention(part);
    ASSERT_EQ(0, std::memcmp(part.out.data<float>(), a.out.data<float>() + (int64_t)r0 * c.heads * c.d,
                             part.out.nbytes()))
        << "n=" << c.n;

    // A probe takes the f32 kernel's weights and leaves the output as it was without it.
    AttentionArgs probed = a, exact = a;
    exact.bf16_inputs = false;
    for (AttentionArgs* x : {&probed, &exact}) {
      x->out = b->empty(DType::F32, {c.n, c.heads, c.d});
      x->probe_rows = make_i32({0});
      x->probe_colsum = b->empty(DType::F32, {c.m});
      std::fill_n(x->probe_colsum.data<float>(), c.m, 0.0f);
      b->attention(*x);
    }
    ASSERT_EQ(0, std::memcmp(probed.out.data<float>(), a.out.data<float>(), a.out.nbytes()));
    ASSERT_EQ(0, std::memcmp(probed.probe_colsum.data<float>(), exact.probe_colsum.data<float>(), c.m * 4));
  }
}

// Many query rows over keys read in place (attention_blocks) in the fast mode give exactly what the same keys
// staged in position order give through attention(): the kernel reads the blocks' rows sorted by position, rows of
// one block interleaved with another's, a subset of a block, rows that see nothing included.
TEST_F(CpuOps, FastBlockAttentionEqualsTheStagedKeysBitForBit) {
  if (cpu::fast_flash_kernel(64) == nullptr) GTEST_SKIP() << "this CPU has neither AVX-512 BF16 nor AVX2 and FMA";
  std::mt19937 rng(13);
  const int n = 40, heads = 9, kv = 3, d = 64;
  BlockAttentionArgs a;
  a.q = make({n, heads, d}, rng);
  a.out = b->empty(DType::F32, {n, heads, d});
  a.scale = 0.125f;
  a.bf16_inputs = true;
  // Block 0: 150 rows, every third one skipped, at even positions; block 1: 60 rows at odd positions.
  std::vector<std::pair<int32_t, std::pair<const float*, const float*>>> by_pos;
  for (int blk = 0; blk < 2; ++blk) {
    const int rows = blk == 0 ? 150 : 60;
    KeyBlock kb{make({rows, kv, d}, rng), make({rows, kv, d}, rng), {}, {}};
    std::vector<int32_t> read, pos;
    for (int r = 0; r < rows; ++r)
      if (blk == 1 || r % 3 != 1) read.push_back(r);
    for (size_t j = 0; j < read.size(); ++j) pos.push_back(blk == 0 ? 2 * (int32_t)j : 2 * (int32_t)j + 1);
    if (blk == 0) kb.rows = make_i32(read);
    kb.pos = make_i32(pos);
    for (size_t j = 0; j < read.size(); ++j)
      by_pos.push_back({pos[j], {kb.k.data<float>() + (int64_t)read[j] * kv * d, kb.v.data<float>() + (int64_t)read[j] * kv * d}});
    a.blocks.push_back(kb);
  }
  std::vector<int32_t> qpos(n);
  for (int i = 0; i < n; ++i) qpos[i] = i == 0 ? -1 : 5 * i + 20;
  a.q_pos = make_i32(qpos);
  b->attention_blocks(a);

  std::sort(by_pos.begin(), by_pos.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const int m = (int)by_pos.size();
  AttentionArgs staged;
  staged.q = a.q;
  staged.q_pos = a.q_pos;
  staged.k = b->empty(DType::F32, {m, kv, d});
  staged.v = b->empty(DType::F32, {m, kv, d});
  std::vector<int32_t> kpos;
  for (int j = 0; j < m; ++j) {
    std::copy_n(by_pos[j].second.first, kv * d, staged.k.data<float>() + (int64_t)j * kv * d);
    std::copy_n(by_pos[j].second.second, kv * d, staged.v.data<float>() + (int64_t)j * kv * d);
    kpos.push_back(by_pos[j].first);
  }
  staged.k_pos = make_i32(kpos);
  staged.out = b->empty(DType::F32, {n, heads, d});
  staged.scale = a.scale;
  staged.bf16_inputs = true;
  b->attention(staged);
  ASSERT_EQ(0, std::memcmp(staged.out.data<float>(), a.out.data<float>(), a.out.nbytes()));
  std::vector<double> ref, colsum;
  naive_attention(staged, ref, colsum, {});
  double err = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) err += std::pow(a.out.data<float>()[i] - ref[i], 2), norm += ref[i] * ref[i];
  EXPECT_LT(err / norm, 1e-4);
}

}  // namespace
}  // namespace kvf
