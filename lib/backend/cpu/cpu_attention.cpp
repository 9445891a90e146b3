// Attention on the CPU following the forward-pass rule (DESIGN.md §3): a query at position p reads the keys whose
// position is <= p. Scores and P·V are sgemm calls.
#include <cblas.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/flash_attention.h"
#include "backend/op_checks.h"
#include "backend/cpu/vec_math.h"

namespace kvf::cpu {

namespace {

void attention_f32(AttentionArgs& a) {
  const AttentionDims dims = attention_dims(a);
  const int64_t n = dims.n, n_heads = dims.n_heads, hd = dims.head_dim, m = dims.m, n_kv = dims.n_kv_heads;
  const int32_t* qp = a.q_pos.data<int32_t>();
  const int32_t* kp = a.k_pos.data<int32_t>();
  const float* q = a.q.data<float>();
  const float* k = a.k.data<float>();
  const float* v = a.v.data<float>();
  float* out = a.out.data<float>();
  const int64_t group = n_heads / n_kv;
  // Keys in position order (the usual layout) let each row stop at its last visible key.
  const bool sorted = std::is_sorted(kp, kp + m);

  std::vector<uint8_t> is_probe(n, 0);
  const bool probing = dims.probing;
  if (probing) {
    const int32_t* pr = a.probe_rows.data<int32_t>();
    for (int64_t i = 0; i < a.probe_rows.numel(); ++i) {
      KVF_CHECK(pr[i] >= 0 && pr[i] < n, "attention: probe row ", pr[i], " outside [0, ", n, ")");
      is_probe[pr[i]] = 1;
    }
  }
  // Per-task partial column sums, added in task order afterwards so the result does not depend on scheduling.
  std::vector<std::vector<float>> probe_partial;

  // One task per (kv head, block of query rows): the query heads sharing that kv head are stacked into one
  // matrix, so each key block is packed once for all of them. Blocks of 16 rows: a block scores every key up to its
  // last row's position, and the rows a sparse prefill recomputes lie far apart, so larger blocks scored many keys
  // their earlier rows never read (measured: docs/engine.md#attention-block). 16 rows times the stacked heads still
  // make a tall enough matrix for sgemm. A fixed size: results must not depend on how many threads run them.
  constexpr int64_t kBlock = 16;
  const int64_t n_blocks = (n + kBlock - 1) / kBlock;
  if (probing) probe_partial.resize(n_kv * n_blocks);
  tbb::enumerable_thread_specific<std::vector<float>> scratch;
  tbb::parallel_for(int64_t{0}, n_kv * n_blocks, [&](int64_t task) {
    const int64_t block_rows = (n + n_blocks - 1) / n_blocks;
    const int64_t g = task / n_blocks, r0 = (task % n_blocks) * block_rows, r1 = std::min(n, r0 + block_rows);
    if (r0 >= r1) return;
    const int64_t rows = r1 - r0, stacked = rows * group;
    const int32_t q_max = *std::max_element(qp + r0, qp + r1);
    const int64_t mk = sorted ? std::upper_bound(kp, kp + m, q_max) - kp : m;
    // Scratch: stacked queries [group*rows, hd], scores [group*rows, mk], outputs [group*rows, hd].
    std::vector<float>& buf = scratch.local();
    buf.resize((size_t)(stacked * (2 * hd + mk)));
    float* qs = buf.data();
    float* s = qs + stacked * hd;
    float* os = s + stacked * mk;
    for (int64_t h = 0; h < group; ++h)
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(q + ((r0 + r) * n_heads + g * group + h) * hd, hd, qs + (h * rows + r) * hd);
    if (mk > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)stacked, (int)mk, (int)hd, a.scale, qs, (int)hd,
                  k + g * hd, (int)(n_kv * hd), 0.0f, s, (int)mk);
    std::vector<float>* probe_acc = probing ? &probe_partial[task] : nullptr;
    for (int64_t i = 0; i < stacked; ++i) {
      float* row = s + i * mk;
      const int64_t qi = r0 + i % rows;
      const int32_t p = qp[qi];
      int64_t len = mk;
      if (sorted) {
        len = std::upper_bound(kp, kp + mk, p) - kp;
      } else {
        for (int64_t j = 0; j < mk; ++j)
          if (kp[j] > p) row[j] = -INFINITY;
      }
      float mx = -INFINITY;
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, row[j]);
      if (mx == -INFINITY) {  // nothing visible: an all-zero output row
        std::fill(row, row + mk, 0.0f);
        continue;
      }
      const float inv = 1.0f / exp_shift_sum(row, len, mx);
      for (int64_t j = 0; j < len; ++j) row[j] *= inv;
      std::fill(row + len, row + mk, 0.0f);
      if (!sorted)
        for (int64_t j = 0; j < mk; ++j)
          if (kp[j] > p) row[j] = 0.0f;
      if (probe_acc && is_probe[qi]) {
        if (probe_acc->empty()) probe_acc->assign(mk, 0.0f);
        for (int64_t j = 0; j < mk; ++j) (*probe_acc)[j] += row[j];
      }
    }
    if (mk > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)stacked, (int)hd, (int)mk, 1.0f, s, (int)mk,
                  v + g * hd, (int)(n_kv * hd), 0.0f, os, (int)hd);
    else
      std::fill(os, os + stacked * hd, 0.0f);
    for (int64_t h = 0; h < group; ++h)
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(os + (h * rows + r) * hd, hd, out + ((r0 + r) * n_heads + g * group + h) * hd);
  });
  float* colsum = probing ? a.probe_colsum.data<float>() : nullptr;
  for (const auto& part : probe_partial)
    for (size_t j = 0; j < part.size(); ++j) colsum[j] += part[j];
}

}  // namespace

const FlashKernel* fast_flash_kernel(int64_t head_dim) {
  static const FlashKernel bf16{flash_attention_bf16, flash_attention_bf16};
  static const FlashKernel avx2{flash_attention_avx2, flash_attention_avx2};
  if (flash_attention_bf16_available(head_dim)) return &bf16;
  if (flash_attention_avx2_available(head_dim)) return &avx2;
  return nullptr;
}

void CpuBackend::attention(AttentionArgs& a) {
  const AttentionDims dims = attention_dims(a);
  const FlashKernel* flash = a.bf16_inputs ? fast_flash_kernel(dims.head_dim) : nullptr;
  if (flash == nullptr) return attention_f32(a);
  // A probe's weights come from the f32 kernel (its output set aside), so attaching one never changes the output.
  if (dims.probing) {
    AttentionArgs probe = a;
    probe.out = empty(DType::F32, a.out.shape);
    attention_f32(probe);
  }
  AttentionArgs plain = a;
  plain.probe_rows = Tensor();
  plain.probe_colsum = Tensor();
  flash->attend(plain);
}

}  // namespace kvf::cpu
