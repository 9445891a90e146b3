// Attention in the fast compute mode (AVX-512 BF16, chosen at run time): a flash-style pass over tiles of 64 keys with an online softmax, so no score matrix is
// ever held. Q, K, the softmax weights and V are rounded to bf16 and multiplied by the compact-weight matmul's
// micro-kernel (kGemmAvx512Bf16.multiply: vdpbf16ps, sums in f32); the running maximum, sum and output stay f32.
//
// The keys are read where they lie (a key table: one K/V pair, or the blocks of a view) and every kv head's keys
// and values are packed once per call into that kernel's panels; then one task per (kv head, block of query
// rows) stacks the query heads sharing the kv head, so each panel serves all of them. A row's result depends
// only on the row and the keys in their order (tiles start at multiples of 64, a tile no key of which the row
// sees changes nothing), never on how rows are blocked or how many threads run.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "backend/cpu/aligned_panels.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/flash_attention.h"
#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/key_table.h"
#include "backend/op_checks.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,fma")
#include "backend/cpu/exp_avx512.h"

// GCC 12 reports the placeholders inside the reduce, widen and shift intrinsics as (maybe-)uninitialized (GCC PR
// 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace kvf::cpu {
namespace {

constexpr int64_t kTile = 64;         // keys per tile: one panel's columns
constexpr int64_t kPanelWords = 32 * kTile;  // a 64 x 64 panel: 32 k pairs of 64 columns, one word per pair
constexpr int64_t kBlockRows = 16;    // query rows per task

// Rows j and j + 1 of a tile of V become one k step of a panel: word c holds (V[j][d0 + c], V[j + 1][d0 + c]) as
// bf16, the low half first as the micro-kernel pairs them. Rows past `rows` are zero (their weights are 0 and
// must meet finite values).
void pack_v_tile(const float* const* v, int64_t rows, int64_t d0, uint32_t* panel) {
  for (int64_t kk = 0; kk < kTile / 2; ++kk) {
    const int64_t j = 2 * kk;
    for (int64_t c = 0; c < 64; c += 16) {
      const __m512 a = j < rows ? _mm512_loadu_ps(v[j] + d0 + c) : _mm512_setzero_ps();
      const __m512 b = j + 1 < rows ? _mm512_loadu_ps(v[j + 1] + d0 + c) : _mm512_setzero_ps();
      const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(a));
      const __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(b));
      _mm512_store_si512(panel + kk * kTile + c, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

// One task's working set, kept per thread.
struct Scratch {
  FlashTask task;
  std::vector<uint16_t> q, p;  // bf16 [lanes, head_dim] and [lanes, kTile]
  std::vector<float> s;        // [lanes, kTile]
};

// The kernel proper (a FlashPass, key_table.h).
void flash_over(const float* q, const int32_t* qp, int64_t n, int64_t H, int64_t KV, int64_t D, const KeyTable& keys,
                float scale, float* out) {
  if (n == 0) return;
  const int64_t m = keys.size(), group = H / KV, d_blocks = D / 64;
  const int32_t* kp = keys.pos.data();
  // Keys in position order (the usual layout) are read only up to the last one any query sees.
  const bool sorted = std::is_sorted(kp, kp + m);
  const int32_t q_max_all = *std::max_element(qp, qp + n);
  const int64_t m_read = sorted ? std::upper_bound(kp, kp + m, q_max_all) - kp : m;
  const int64_t tiles = (m_read + kTile - 1) / kTile;

  // K panels: [kv head][tile] of (head_dim / 2) k pairs x 64 keys; V panels: [kv head][tile][d block] of 32 key
  // pairs x 64 dims.
  const int64_t k_words = D / 2 * kTile, v_words = d_blocks * kPanelWords;
  AlignedPanels<uint32_t> kpan, vpan;
  kpan.resize((size_t)(KV * tiles * k_words));
  vpan.resize((size_t)(KV * tiles * v_words));
  tbb::parallel_for(int64_t{0}, KV * tiles, [&](int64_t item) {
    const int64_t g = item / tiles, t = item % tiles, j0 = t * kTile, rows = std::min(kTile, m - j0);
    const float* k_rows[kTile];
    const float* v_rows[kTile];
    for (int64_t j = 0; j < rows; ++j) k_rows[j] = keys.k[j0 + j] + g * D, v_rows[j] = keys.v[j0 + j] + g * D;
    pack_panel_rows_bf16(k_rows, (int)rows, (int)D, kpan.base + item * k_words);
    for (int64_t db = 0; db < d_blocks; ++db)
      pack_v_tile(v_rows, rows, 64 * db, vpan.base + item * v_words + db * kPanelWords);
  });

  for_each_flash_task<Scratch>(n, KV, kBlockRows, group, D, qp, [&](Scratch& s, FlashTask& f) {
    const int64_t g = f.g, lanes = f.lanes;
    s.q.resize((size_t)(lanes * D));
    s.p.resize((size_t)(lanes * kTile));
    s.s.resize((size_t)(lanes * kTile));
    for (int64_t lane = 0; lane < lanes; ++lane)
      kGemmAvx512Bf16.convert_x(q + f.q_offset(lane, H, group, D), D, s.q.data() + lane * D);
    const int64_t m_task = sorted ? std::upper_bound(kp, kp + m_read, f.q_max) - kp : m;
    for (int64_t t = 0; t * kTile < m_task; ++t) {
      const int64_t j0 = t * kTile, valid = std::min(kTile, m - j0);
      kGemmAvx512Bf16.multiply(s.q.data(), D, (int)lanes, kpan.base + (g * tiles + t) * k_words, (int)D, (int)kTile,
                               s.s.data(), kTile, false);
      __m512i kpos[4];
      for (int i = 0; i < 4; ++i) {
        // Keys past the last are never seen: position INT_MAX.
        const int64_t left = std::clamp<int64_t>(valid - 16 * i, 0, 16);
        const __mmask16 in = (__mmask16)(left == 16 ? 0xFFFF : (1u << left) - 1);
        kpos[i] = left == 0 ? _mm512_set1_epi32(INT_MAX)
                            : _mm512_mask_loadu_epi32(_mm512_set1_epi32(INT_MAX), in, kp + j0 + 16 * i);
      }
      bool any = false;
      for (int64_t lane = 0; lane < lanes; ++lane) {
        float* sc = s.s.data() + lane * kTile;
        uint16_t* pr = s.p.data() + lane * kTile;
        const __m512i p = _mm512_set1_epi32(f.pos[(size_t)lane]);
        __mmask16 seen[4];
        __m512 x[4];
        __m512 tile_max = _mm512_set1_ps(-INFINITY);
        for (int i = 0; i < 4; ++i) {
          seen[i] = _mm512_cmple_epi32_mask(kpos[i], p);
          x[i] = _mm512_mul_ps(_mm512_loadu_ps(sc + 16 * i), _mm512_set1_ps(scale));
          tile_max = _mm512_mask_max_ps(tile_max, seen[i], tile_max, x[i]);
        }
        const float tmax = _mm512_reduce_max_ps(tile_max);
        if (tmax == -INFINITY) {  // the row sees no key of this tile
          std::fill(pr, pr + kTile, uint16_t{0});
          continue;
        }
        any = true;
        float& mx = f.max[(size_t)lane];
        const float new_max = std::max(mx, tmax);
        if (mx != -INFINITY && new_max > mx) {  // rescale what the earlier tiles added
          const float keep = std::exp(mx - new_max);
          f.sum[(size_t)lane] *= keep;
          float* o = f.o.data() + lane * D;
          for (int64_t d = 0; d < D; d += 16)
            _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), _mm512_set1_ps(keep)));
        }
        mx = new_max;
        __m512 total = _mm512_setzero_ps();
        for (int i = 0; i < 4; ++i) {
          const __m512 e = _mm512_maskz_mov_ps(seen[i], exp_ps(_mm512_sub_ps(x[i], _mm512_set1_ps(new_max))));
          total = _mm512_add_ps(total, e);
          _mm256_storeu_si256((__m256i*)(pr + 16 * i), (__m256i)_mm512_cvtneps_pbh(e));
        }
        f.sum[(size_t)lane] += _mm512_reduce_add_ps(total);
      }
      if (!any) continue;  // every weight of this tile is 0
      for (int64_t db = 0; db < d_blocks; ++db)
        kGemmAvx512Bf16.multiply(s.p.data(), kTile, (int)lanes,
                                 vpan.base + (g * tiles + t) * v_words + db * kPanelWords, (int)kTile, 64,
                                 f.o.data() + 64 * db, D, true);
    }
    f.write(H, group, D, out);
  });
}

}  // namespace

bool flash_attention_bf16_available(int64_t head_dim) {
  return cpu_kernels().attention == AttentionKernel::Avx512Bf16 && head_dim % 64 == 0;
}

const FlashPassOf kPass{flash_over, flash_attention_bf16_available, "AVX-512 BF16, head_dim a multiple of 64"};

void flash_attention_bf16(const AttentionArgs& a) { run_flash_pass(kPass, a); }
void flash_attention_bf16(const BlockAttentionArgs& a) { run_flash_pass(kPass, a); }

}  // namespace kvf::cpu

KVF_ISA_END
#pragma GCC diagnostic pop
