// Attention in the fast compute mode on CPUs with AVX2 and FMA but without AVX-512 BF16 (chosen at run time): the
// flash-style pass of flash_attention_bf16.cpp in f32. Tiles of 64 keys with an online softmax, so no score matrix
// is held; every kv head's K and V are packed once per call into the AVX2 matmul micro-kernel's panels
// (kGemmAvx2F32: 6 x 16 FMA tiles), and one task per (kv head, block of 16 query rows) stacks the query heads that
// share the kv head, so each panel serves all of them. Q, K, V, the scores and the softmax weights stay f32. (The
// f32 kernel it replaces in the fast mode, sgemm per block of rows, packed each block's keys again and held the
// block's whole score matrix.)
//
// A row's result depends only on the row and the keys in their order (tiles start at multiples of 64, a tile no
// key of which the row sees changes nothing, and the micro-kernel gives every output the same operations however
// many rows it multiplies), never on how rows are blocked or how many threads run.
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

KVF_ISA_BEGIN("avx2,fma")
#include <immintrin.h>

#include "backend/cpu/vec_math.h"

namespace kvf::cpu {

#if defined(KVF_HAS_EXP8)
namespace {

constexpr int64_t kTile = 64;       // keys per tile
constexpr int64_t kBlockRows = 16;  // query rows per task
constexpr int kCols = 16;           // columns of one kGemmAvx2F32 panel (checked in flash_over)

// The largest of the 8 lanes.
float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// One task's working set, kept per thread.
struct Scratch {
  FlashTask task;
  std::vector<float> q, s;  // [lanes, head_dim] and [lanes, kTile] (scores, then weights)
};

// K of one tile of one kv head as 4 panels of 16 keys (columns) by D values, V as D / 16 panels of 16 dims
// (columns) by the tile's 64 keys, through `buf` (64 * D floats). Keys past `rows` are zero.
void pack_tile(const KeyTable& keys, int64_t j0, int64_t rows, int64_t off, int64_t D, std::vector<float>& buf,
               float* k_panels, float* v_panels) {
  const GemmIsa& isa = kGemmAvx2F32;
  buf.resize((size_t)(kTile * D));
  for (int64_t j = 0; j < rows; ++j) std::copy_n(keys.k[j0 + j] + off, D, buf.data() + j * D);
  for (int p = 0; p < kTile / kCols; ++p)
    isa.pack_panel(buf.data() + p * kCols * D, D, (int)std::clamp<int64_t>(rows - p * kCols, 0, kCols), (int)D,
                   k_panels + p * kCols * D);
  for (int64_t d0 = 0; d0 < D; d0 += kCols) {
    float* vt = buf.data();  // [16 dims][64 keys]
    for (int c = 0; c < kCols; ++c)
      for (int64_t j = 0; j < kTile; ++j) vt[c * kTile + j] = j < rows ? keys.v[j0 + j][off + d0 + c] : 0.0f;
    isa.pack_panel(vt, kTile, kCols, (int)kTile, v_panels + d0 / kCols * kTile * kCols);
  }
}

// The scores of one lane (query row and head) over a tile: the forward rule, then the online softmax. Turns the
// scores into weights (0 where a key is not seen), rescales o and the running sum when the maximum grows; false
// when the lane sees no key of the tile (its weights are then all 0).
bool softmax_tile(float* sc, const __m256i (&kpos)[kTile / 8], int32_t pos, float scale, float& mx, float& sum,
                  float* o, int64_t D) {
  const __m256i p = _mm256_set1_epi32(pos);
  __m256 seen[kTile / 8], x[kTile / 8];
  __m256 tile_max = _mm256_set1_ps(-INFINITY);
  for (int i = 0; i < kTile / 8; ++i) {
    seen[i] = _mm256_castsi256_ps(_mm256_xor_si256(_mm256_cmpgt_epi32(kpos[i], p), _mm256_set1_epi32(-1)));
    x[i] = _mm256_mul_ps(_mm256_loadu_ps(sc + 8 * i), _mm256_set1_ps(scale));
    tile_max = _mm256_max_ps(tile_max, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x[i], seen[i]));
  }
  const float tmax = hmax8(tile_max);
  if (tmax == -INFINITY) {
    std::fill(sc, sc + kTile, 0.0f);
    return false;
  }
  const float new_max = std::max(mx, tmax);
  if (mx != -INFINITY && new_max > mx) {  // rescale what the earlier tiles added
    const float keep = std::exp(mx - new_max);
    sum *= keep;
    for (int64_t d = 0; d < D; d += 8)
      _mm256_storeu_ps(o + d, _mm256_mul_ps(_mm256_loadu_ps(o + d), _mm256_set1_ps(keep)));
  }
  mx = new_max;
  __m256 total = _mm256_setzero_ps();
  for (int i = 0; i < kTile / 8; ++i) {
    const __m256 e = _mm256_and_ps(exp8_ps(_mm256_sub_ps(x[i], _mm256_set1_ps(new_max))), seen[i]);
    total = _mm256_add_ps(total, e);
    _mm256_storeu_ps(sc + 8 * i, e);
  }
  sum += hsum8(total);
  return true;
}

// The kernel proper (a FlashPass, key_table.h).
void flash_over(const float* q, const int32_t* qp, int64_t n, int64_t H, int64_t KV, int64_t D, const KeyTable& keys,
                float scale, float* out) {
  if (n == 0) return;
  const GemmIsa& isa = kGemmAvx2F32;
  KVF_CHECK(isa.panel_cols == kCols && D % isa.k_step == 0, "flash attention (AVX2): panels of ", isa.panel_cols,
            " columns and ", isa.k_step, "-value steps, head_dim ", D);
  const int64_t m = keys.size(), group = H / KV;
  const int32_t* kp = keys.pos.data();
  // Keys in position order (the usual layout) are read only up to the last one any query sees.
  const bool sorted = std::is_sorted(kp, kp + m);
  const int32_t q_max_all = *std::max_element(qp, qp + n);
  const int64_t m_read = sorted ? std::upper_bound(kp, kp + m, q_max_all) - kp : m;
  const int64_t tiles = (m_read + kTile - 1) / kTile;

  // Panels: [kv head][tile], kTile * D floats of K and as many of V each.
  const int64_t tile_floats = kTile * D;
  AlignedPanels<float> kpan, vpan;
  kpan.resize((size_t)(KV * tiles * tile_floats));
  vpan.resize((size_t)(KV * tiles * tile_floats));
  tbb::enumerable_thread_specific<std::vector<float>> pack_buffers;
  tbb::parallel_for(int64_t{0}, KV * tiles, [&](int64_t item) {
    const int64_t g = item / tiles, t = item % tiles, j0 = t * kTile;
    pack_tile(keys, j0, std::min(kTile, m - j0), g * D, D, pack_buffers.local(), kpan.base + item * tile_floats,
              vpan.base + item * tile_floats);
  });

  for_each_flash_task<Scratch>(n, KV, kBlockRows, group, D, qp, [&](Scratch& s, FlashTask& f) {
    const int64_t g = f.g, lanes = f.lanes;
    s.q.resize((size_t)(lanes * D));
    s.s.resize((size_t)(lanes * kTile));
    for (int64_t lane = 0; lane < lanes; ++lane)
      std::copy_n(q + f.q_offset(lane, H, group, D), D, s.q.data() + lane * D);
    const int64_t m_task = sorted ? std::upper_bound(kp, kp + m_read, f.q_max) - kp : m;
    for (int64_t t = 0; t * kTile < m_task; ++t) {
      const int64_t j0 = t * kTile, valid = std::min(kTile, m - j0);
      const float* k_panels = kpan.base + (g * tiles + t) * tile_floats;
      for (int p = 0; p < kTile / kCols; ++p)
        isa.multiply(s.q.data(), D, (int)lanes, k_panels + p * kCols * D, (int)D, kCols, s.s.data() + p * kCols,
                     kTile, false);
      __m256i kpos[kTile / 8];  // keys past the last are never seen: position INT_MAX
      for (int i = 0; i < kTile / 8; ++i) {
        alignas(32) int32_t at[8];
        for (int l = 0; l < 8; ++l) at[l] = 8 * i + l < valid ? kp[j0 + 8 * i + l] : INT_MAX;
        kpos[i] = _mm256_load_si256(reinterpret_cast<const __m256i*>(at));
      }
      bool any = false;
      for (int64_t lane = 0; lane < lanes; ++lane)
        any |= softmax_tile(s.s.data() + lane * kTile, kpos, f.pos[(size_t)lane], scale, f.max[(size_t)lane],
                            f.sum[(size_t)lane], f.o.data() + lane * D, D);
      if (!any) continue;  // every weight of this tile is 0
      const float* v_panels = vpan.base + (g * tiles + t) * tile_floats;
      for (int64_t d0 = 0; d0 < D; d0 += kCols)
        isa.multiply(s.s.data(), kTile, (int)lanes, v_panels + d0 / kCols * kTile * kCols, (int)kTile, kCols,
                     f.o.data() + d0, D, true);
    }
    f.write(H, group, D, out);
  });
}

}  // namespace

bool flash_attention_avx2_available(int64_t head_dim) {
  return cpu_kernels().attention != AttentionKernel::F32 && head_dim % kCols == 0;
}

const FlashPassOf kPass{flash_over, flash_attention_avx2_available, "AVX2 and FMA, head_dim a multiple of 16"};

void flash_attention_avx2(const AttentionArgs& a) { run_flash_pass(kPass, a); }
void flash_attention_avx2(const BlockAttentionArgs& a) { run_flash_pass(kPass, a); }

#else  // a build whose compiler does not target AVX2 here: the f32 kernels

bool flash_attention_avx2_available(int64_t) { return false; }
void flash_attention_avx2(const AttentionArgs&) { fail("flash attention (AVX2): not in this build"); }
void flash_attention_avx2(const BlockAttentionArgs&) { fail("flash attention (AVX2): not in this build"); }

#endif

}  // namespace kvf::cpu

KVF_ISA_END
