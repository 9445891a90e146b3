// Attention over keys read in place. More than kBlockAttentionFewRows query rows go to the fast mode's flash kernel
// (flash_attention.h) or, in f32, through staging; fewer (decoding steps, short questions over a long
// view) are computed here in f32: a flash-style pass over tiles of keys with an online softmax, no score matrix
// and no staging copy. The keys are split into spans worked on in parallel, each keeping its own running
// maximum, sum and output, merged in span order at the end so the result does not depend on scheduling.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/flash_attention.h"
#include "backend/cpu/key_table.h"
#include "backend/cpu/vec_math.h"
#include "backend/op_checks.h"

// GCC 12 reports the placeholders inside _mm512_reduce_add_ps as maybe-uninitialized (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {
namespace {

constexpr int64_t kTile = 32;       // keys scored before the running softmax state is updated
constexpr int64_t kMinSpan = 64;    // fewest keys worth a task of their own
constexpr int64_t kMaxSpans = 32;

float dot(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#if defined(__AVX512F__)
  __m512 acc = _mm512_setzero_ps();
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  sum = _mm512_reduce_add_ps(acc);
#elif defined(KVF_VEC_AVX2)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  sum = hsum8(_mm256_add_ps(acc0, acc1));
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += p * x
void add_scaled(float* y, float p, const float* x, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 pp = _mm512_set1_ps(p);
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(pp, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
#elif defined(KVF_VEC_AVX2)
  const __m256 pp = _mm256_set1_ps(p);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(pp, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
  for (; i < n; ++i) y[i] += p * x[i];
}

// o += p[t] * rows[t][off..off + D) for t < n in order, skipping p[t] == 0: add_scaled row by row, with the same
// operations in the same order for every value, but o held in registers 64 values at a time instead of loaded and
// stored once per row (the add_scaled form spent most of a decoding step's attention on those loads and stores).
void add_scaled_rows(float* o, const float* p, const float* const* rows, int64_t off, int64_t n, int64_t D) {
  int64_t i0 = 0;
#if defined(__AVX512F__)
  for (; i0 + 64 <= D; i0 += 64) {
    __m512 a0 = _mm512_loadu_ps(o + i0), a1 = _mm512_loadu_ps(o + i0 + 16), a2 = _mm512_loadu_ps(o + i0 + 32),
           a3 = _mm512_loadu_ps(o + i0 + 48);
    for (int64_t t = 0; t < n; ++t) {
      if (p[t] == 0.0f) continue;
      const __m512 pp = _mm512_set1_ps(p[t]);
      const float* v = rows[t] + off + i0;
      a0 = _mm512_fmadd_ps(pp, _mm512_loadu_ps(v), a0);
      a1 = _mm512_fmadd_ps(pp, _mm512_loadu_ps(v + 16), a1);
      a2 = _mm512_fmadd_ps(pp, _mm512_loadu_ps(v + 32), a2);
      a3 = _mm512_fmadd_ps(pp, _mm512_loadu_ps(v + 48), a3);
    }
    _mm512_storeu_ps(o + i0, a0);
    _mm512_storeu_ps(o + i0 + 16, a1);
    _mm512_storeu_ps(o + i0 + 32, a2);
    _mm512_storeu_ps(o + i0 + 48, a3);
  }
#elif defined(KVF_VEC_AVX2)
  for (; i0 + 64 <= D; i0 += 64) {
    __m256 a0 = _mm256_loadu_ps(o + i0), a1 = _mm256_loadu_ps(o + i0 + 8), a2 = _mm256_loadu_ps(o + i0 + 16),
           a3 = _mm256_loadu_ps(o + i0 + 24), a4 = _mm256_loadu_ps(o + i0 + 32), a5 = _mm256_loadu_ps(o + i0 + 40),
           a6 = _mm256_loadu_ps(o + i0 + 48), a7 = _mm256_loadu_ps(o + i0 + 56);
    for (int64_t t = 0; t < n; ++t) {
      if (p[t] == 0.0f) continue;
      const __m256 pp = _mm256_set1_ps(p[t]);
      const float* v = rows[t] + off + i0;
      a0 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v), a0);
      a1 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 8), a1);
      a2 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 16), a2);
      a3 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 24), a3);
      a4 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 32), a4);
      a5 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 40), a5);
      a6 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 48), a6);
      a7 = _mm256_fmadd_ps(pp, _mm256_loadu_ps(v + 56), a7);
    }
    _mm256_storeu_ps(o + i0, a0);
    _mm256_storeu_ps(o + i0 + 8, a1);
    _mm256_storeu_ps(o + i0 + 16, a2);
    _mm256_storeu_ps(o + i0 + 24, a3);
    _mm256_storeu_ps(o + i0 + 32, a4);
    _mm256_storeu_ps(o + i0 + 40, a5);
    _mm256_storeu_ps(o + i0 + 48, a6);
    _mm256_storeu_ps(o + i0 + 56, a7);
  }
#endif
  if (i0 < D)
    for (int64_t t = 0; t < n; ++t)
      if (p[t] != 0.0f) add_scaled(o + i0, p[t], rows[t] + off + i0, D - i0);
}

void scale(float* y, float c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= c;
}

// Asks for the K and V rows of keys [from, to) (their kv head's D values at offset off) to be brought into cache
// while the current tile is worked on: a decoding step reads every key once, from rows that are far apart in
// memory (one per token, every kv head's values side by side), and without this it waits on each row in turn.
void prefetch_rows(const KeyTable& keys, int64_t from, int64_t to, int64_t off, int64_t D) {
  constexpr int64_t kLine = 64 / sizeof(float);
  for (int64_t j = from; j < to; ++j)
    for (int64_t i = 0; i < D; i += kLine) {
      __builtin_prefetch(keys.k[j] + off + i);
      __builtin_prefetch(keys.v[j] + off + i);
    }
}

// The softmax state of one (query row, head) over one span of keys.
struct Partial {
  float max = -INFINITY, sum = 0.0f;
};

}  // namespace

void CpuBackend::attention_blocks(const BlockAttentionArgs& a) {
  const BlockAttentionDims d = block_attention_dims(a);
  if (d.n > kBlockAttentionFewRows) {  // many rows: the fast mode's kernels read in place too; in f32, staged sgemm
    const FlashKernel* flash = a.bf16_inputs ? fast_flash_kernel(d.head_dim) : nullptr;
    if (flash != nullptr) return flash->attend_blocks(a);
    return Backend::attention_blocks(a);
  }
  const int64_t n = d.n, H = d.n_heads, KV = d.n_kv_heads, D = d.head_dim, m = d.m, group = H / KV;
  const KeyTable keys = key_table(a, KV * D);
  const float* q = a.q.data<float>();
  const int32_t* qp = a.q_pos.data<int32_t>();
  float* out = a.out.data<float>();
  const int64_t spans = std::clamp<int64_t>(m / kMinSpan, 1, kMaxSpans), span = (m + spans - 1) / spans;
  const int64_t lanes = n * group;  // (query row, head of the group) pairs of one kv head
  std::vector<Partial> state((size_t)(KV * spans * lanes));
  std::vector<float> acc((size_t)(KV * spans * lanes * D), 0.0f);

  tbb::parallel_for(int64_t{0}, KV * spans, [&](int64_t task) {
    const int64_t g = task / spans, j0 = (task % spans) * span, j1 = std::min(m, j0 + span);
    Partial* st = &state[(size_t)(task * lanes)];
    float* ac = &acc[(size_t)(task * lanes * D)];
    float scores[kTile];
    for (int64_t t0 = j0; t0 < j1; t0 += kTile) {
      const int64_t tn = std::min(kTile, j1 - t0);
      prefetch_rows(keys, t0 + kTile, std::min(j1, t0 + 2 * kTile), g * D, D);
      for (int64_t lane = 0; lane < lanes; ++lane) {
        const int64_t r = lane / group, h = g * group + lane % group;
        const float* qv = q + (r * H + h) * D;
        float tile_max = -INFINITY;
        int64_t visible = 0;
        for (int64_t t = 0; t < tn; ++t) {
          const int64_t j = t0 + t;
          const bool seen = keys.pos[j] <= qp[r];
          scores[t] = seen ? dot(qv, keys.k[j] + g * D, D) * a.scale : -INFINITY;
          visible += seen;
          tile_max = std::max(tile_max, scores[t]);
        }
        if (tile_max == -INFINITY) continue;  // nothing visible in this tile
        Partial& s = st[lane];
        float* o = ac + lane * D;
        const float new_max = std::max(s.max, tile_max);
        if (s.max != new_max && s.max != -INFINITY) {  // rescale what the earlier tiles added
          const float keep = std::exp(s.max - new_max);
          s.sum *= keep;
          scale(o, keep, D);
        }
        // exp of the tile's scores, vectorised when every key is visible (the usual case: a causal cut only
        // falls inside the last tiles); hidden keys weigh exactly 0.
        if (visible == tn) {
          s.sum += exp_shift_sum(scores, tn, new_max);
        } else {
          for (int64_t t = 0; t < tn; ++t) {
            scores[t] = scores[t] == -INFINITY ? 0.0f : std::exp(scores[t] - new_max);
            s.sum += scores[t];
          }
        }
        add_scaled_rows(o, scores, keys.v.data() + t0, g * D, tn, D);
        s.max = new_max;
      }
    }
  });

  // Merge the spans of each (row, head) in span order; a row that sees no key gets zeros.
  tbb::parallel_for(int64_t{0}, KV * lanes, [&](int64_t item) {
    const int64_t g = item / lanes, lane = item % lanes;
    const int64_t r = lane / group, h = g * group + lane % group;
    float total_max = -INFINITY;
    for (int64_t s = 0; s < spans; ++s) total_max = std::max(total_max, state[(size_t)((g * spans + s) * lanes + lane)].max);
    float* o = out + (r * H + h) * D;
    std::fill(o, o + D, 0.0f);
    if (total_max == -INFINITY) return;
    float sum = 0.0f;
    for (int64_t s = 0; s < spans; ++s) {
      const Partial& p = state[(size_t)((g * spans + s) * lanes + lane)];
      if (p.max == -INFINITY) continue;
      const float w = std::exp(p.max - total_max);
      sum += w * p.sum;
      add_scaled(o, w, &acc[(size_t)(((g * spans + s) * lanes + lane) * D)], D);
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < D; ++i) o[i] *= inv;
  });
}

}  // namespace kvf::cpu

#pragma GCC diagnostic pop
