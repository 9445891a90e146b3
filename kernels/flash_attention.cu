// The sparse prefill's attention on tensor cores: a tiled, flash-style kernel that reads the query rows with their
// positions (the Q index: the recomputed tokens, wherever they lie) and the keys with theirs, and applies the
// forward rule (key position <= query position, DESIGN.md §3) element by element. No mask is built; a key tile
// whose lowest position is past the query tile's highest is skipped whole, so the work follows the causal area
// of the rows actually computed.
//
// One launch takes one sequence or several independent ones (a precompute batch's chunks, each its own rows, keys
// and positions): a block works on a row tile of one head of one sequence, named by a descriptor list that puts
// the longest row tiles of every sequence first.
// Block: 4 warps, 128 query rows (32 per warp: two m-tiles) or, where that leaves too few blocks, 64 (16 per
// warp); 64-key tiles. S = Q·K^T and O += P·V are bf16 mma.sync m16n8k16 with f32 accumulators, their
// fragments by matrix loads; the online softmax (running max and sum per row) stays in registers. K/V tiles are
// double-buffered with cp.async: the next visited tile loads while this one is computed. Q arrives in f32 and
// is rounded to bf16 once, K and V in bf16 (the backend converts them once per call). Measured forms and their
// times: docs/results/gpu_h100.md.
#include <cfloat>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>

#include <cuda_bf16.h>
#include "cuda_ops.cuh"
#include "key_splits.h"

namespace kvf::cuda {
namespace {

constexpr int kKeys = 64;     // keys per tile
constexpr int kThreads = 128; // 4 warps
constexpr int kPad = 8;       // bf16 padding per shared row: 16 bytes, so fragment loads hit distinct banks

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower address)
  return *reinterpret_cast<const uint32_t*>(&v);
}

// D[16x8] += A[16x16] · B[16x8], bf16 in, f32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 bf16 matrices from shared memory: lane l names row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const uint32_t addr = (uint32_t)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// The same, transposed.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const uint32_t addr = (uint32_t)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// 16 bytes global -> shared without passing through registers; zero-filled when !valid (then nothing is read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const uint32_t addr = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Lowest and highest key position of every 64-key tile of every sequence (tile_pos[t], tile_pos[tiles + t]; a
// sequence's tiles start at its tile_first): a block skips the tiles none of its rows reads, and a warp skips the
// per-key rule on full tiles all of its rows read whole.
__global__ void key_tile_bounds_kernel(const FlashSequence* seqs, int64_t n_seqs, const int32_t* k_pos, int64_t tiles,
                                       int32_t* tile_pos) {
  const int64_t tile = blockIdx.x;
  int64_t s = 0;
  while (s + 1 < n_seqs && seqs[s + 1].tile_first <= tile) ++s;
  const FlashSequence seq = seqs[s];
  const int64_t key0 = (tile - seq.tile_first) * kKeys;
  const int32_t* pos = k_pos + seq.k_first;
  int32_t lo = INT_MAX, hi = INT_MIN;
  for (int64_t j = key0 + threadIdx.x; j < seq.m && j < key0 + kKeys; j += blockDim.x)
    lo = min(lo, pos[j]), hi = max(hi, pos[j]);
  for (int offset = 16; offset > 0; offset /= 2) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
  }
  if (threadIdx.x == 0) tile_pos[tile] = lo, tile_pos[tiles + tile] = hi;
}

// kMT: 16-row m-tiles per warp. With two, every K and V fragment a warp loads from shared memory feeds two
// MMAs instead of one (shared-memory traffic per MMA down by about a third, Q then re-read from shared memory
// each tile since its fragments no longer fit in registers beside the accumulators); with one, Q stays in
// registers.
template <int D, int kMT>
__global__ void __launch_bounds__(kThreads, 2)  // two resident blocks at least (resident_blocks: how many)
    flash_attention_kernel(AttentionShape sh, const FlashSequence* seqs, const int2* blocks, const __nv_bfloat16* k,
                           const __nv_bfloat16* v, const int32_t* k_pos, const int32_t* tile_pos, int64_t call_tiles,
                           KeySplits split) {
  constexpr int kStride = D + kPad;
  constexpr int kWarpRows = 16 * kMT, kBlockRows = kWarpRows * (kThreads / 32);
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kStages = 2;
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem);  // [kBlockRows][kStride]
  __nv_bfloat16* sK0 = sQ + kBlockRows * kStride;               // [kStages][kKeys][kStride]
  __nv_bfloat16* sV0 = sK0 + kStages * kKeys * kStride;         // [kStages][kKeys][kStride]
  __shared__ int32_t block_max_pos;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  // This block's sequence, row tile and head: every head of a row tile before the next tile, the tiles longest
  // first (the launcher orders them), so the blocks with the most keys start first whatever the head count.
  const int2 block = blocks[blockIdx.x / sh.n_heads];
  const FlashSequence seq = seqs[block.x];
  const float* q = seq.q;
  const int32_t* q_pos = seq.q_pos;
  k += seq.k_first * sh.n_kv_heads * D;
  v += seq.k_first * sh.n_kv_heads * D;
  k_pos += seq.k_first;
  const int64_t n = seq.n, m = seq.m;
  const int64_t row0 = (int64_t)block.y * kBlockRows, head = blockIdx.x % sh.n_heads;
  const int64_t kv_head = head / (sh.n_heads / sh.n_kv_heads);
  const int64_t q_stride = sh.n_heads * D, kv_stride = sh.n_kv_heads * D;

  // Q tile: f32 -> bf16 into shared memory (rows past n are zeros and see no key).
  if (tid == 0) block_max_pos = INT_MIN;
  __syncthreads();
  for (int i = tid; i < kBlockRows * D / 4; i += kThreads) {
    const int r = i / (D / 4), c = (i % (D / 4)) * 4;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + r < n) x = *reinterpret_cast<const float4*>(q + (row0 + r) * q_stride + head * D + c);
    uint2 packed = make_uint2(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w));
    *reinterpret_cast<uint2*>(sQ + r * kStride + c) = packed;
  }
  for (int r = tid; r < kBlockRows; r += kThreads)
    if (row0 + r < n) atomicMax(&block_max_pos, q_pos[row0 + r]);
  // This thread's rows: g and g + 8 of each of the warp's m-tiles, and their positions.
  const auto row_of = [&](int mt, int h) { return row0 + warp * kWarpRows + mt * 16 + h * 8 + g; };
  int32_t pos[kMT][2];
  int32_t warp_min_pos = INT_MAX;  // the lowest position among this warp's rows
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      pos[mt][h] = row_of(mt, h) < n ? q_pos[row_of(mt, h)] : INT_MIN;
      warp_min_pos = min(warp_min_pos, pos[mt][h]);
    }
  for (int offset = 16; offset > 0; offset /= 2)
    warp_min_pos = min(warp_min_pos, __shfl_xor_sync(0xffffffffu, warp_min_pos, offset));
  const int64_t all_tiles = (m + kKeys - 1) / kKeys;
  const int32_t* tile_min = tile_pos + seq.tile_first;
  const int32_t* tile_max = tile_pos + call_tiles + seq.tile_first;
  __syncthreads();

  // One m-tile of this warp's Q as the A fragment of a 16-dim step.
  const auto q_fragment = [&](uint32_t(&a)[4], int mt, int kk) {
    ldmatrix_x4(a, sQ + (warp * kWarpRows + mt * 16 + lane % 16) * kStride + kk * 16 + (lane / 16) * 8);
  };
  // With one m-tile, its fragments for every 16-dim step, loaded once.
  uint32_t q_held[kMT == 1 ? D / 16 : 1][4];
  if constexpr (kMT == 1) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) q_fragment(q_held[kk], 0, kk);
  }

  float o[kMT][D / 8][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) o[mt][nt][0] = o[mt][nt][1] = o[mt][nt][2] = o[mt][nt][3] = 0.f;
  // Running max (scaled, log2 units) and partial sums per row; a row that has read nothing has max -inf.
  float row_m[kMT][2], row_l[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) row_m[mt][0] = row_m[mt][1] = -INFINITY, row_l[mt][0] = row_l[mt][1] = 0.f;
  const float scale_log2 = sh.scale * 1.4426950408889634f;
  const int32_t max_pos = block_max_pos;
  // This block's share of the key tiles (all of them unless the keys are split over blocks).
  const int64_t first_tile = blockIdx.z * split.tiles_per_split;
  const int64_t tiles = min(all_tiles, first_tile + split.tiles_per_split);

  // The tiles some row of this block reads, in order.
  const auto next_tile = [&](int64_t after) {
    int64_t t = after + 1;
    while (t < tiles && tile_min[t] > max_pos) ++t;
    return t;
  };
  const auto load_tile = [&](int64_t tile, int stage) {
    const int64_t key0 = tile * kKeys;
    __nv_bfloat16* sK = sK0 + stage * kKeys * kStride;
    __nv_bfloat16* sV = sV0 + stage * kKeys * kStride;
    for (int i = tid; i < kKeys * D / 8; i += kThreads) {
      const int r = i / (D / 8), c = (i % (D / 8)) * 8;
      const bool valid = key0 + r < m;
      const int64_t at = valid ? (key0 + r) * kv_stride + kv_head * D + c : 0;
      cp_async16(sK + r * kStride + c, k + at, valid);
      cp_async16(sV + r * kStride + c, v + at, valid);
    }
  };

  int64_t tile = next_tile(first_tile - 1);
  int stage = 0;
  if (tile < tiles) load_tile(tile, 0);
  cp_async_commit();
  while (tile < tiles) {
    const int64_t key0 = tile * kKeys, following = next_tile(tile);
    if (following < tiles) load_tile(following, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();  // this tile's group has landed; the next one may still be in flight
    __syncthreads();
    const __nv_bfloat16* sK = sK0 + stage * kKeys * kStride;
    const __nv_bfloat16* sV = sV0 + stage * kKeys * kStride;

    // S = Q K^T for this warp's rows and the tile's 64 keys (8 n-tiles of 8 keys), one 16-dim step at a time.
    float s[kMT][kKeys / 8][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (kMT == 1) {
#pragma unroll
          for (int i = 0; i < 4; ++i) qa[mt][i] = q_held[kk][i];
        } else {
          q_fragment(qa[mt], mt, kk);
        }
      }
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; nt += 2) {
        uint32_t b[4];  // one load: the B fragments of two 8-key n-tiles
        ldmatrix_x4(b, sK + ((nt + lane / 16) * 8 + lane % 8) * kStride + kk * 16 + (lane / 8) % 2 * 8);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16(s[mt][nt], qa[mt], b[0], b[1]);
          mma_bf16(s[mt][nt + 1], qa[mt], b[2], b[3]);
        }
      }
    }
    // The forward rule (a key a row must not read scores -inf), then the online softmax in base 2 on the raw
    // scores: one FFMA scales and shifts each, and exp2(-inf) = 0 weighs out what the rule removed.
    if (!(key0 + kKeys <= m && tile_max[tile] <= warp_min_pos)) {
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt) {
        const int64_t j0 = key0 + nt * 8 + 2 * t;
        const int32_t p0 = j0 < m ? k_pos[j0] : INT_MAX, p1 = j0 + 1 < m ? k_pos[j0 + 1] : INT_MAX;
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          if (p0 > pos[mt][0]) s[mt][nt][0] = -INFINITY;
          if (p1 > pos[mt][0]) s[mt][nt][1] = -INFINITY;
          if (p0 > pos[mt][1]) s[mt][nt][2] = -INFINITY;
          if (p1 > pos[mt][1]) s[mt][nt][3] = -INFINITY;
        }
      }
    }
    uint32_t pa[kMT][kKeys / 16][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      float raw_lo = -INFINITY, raw_hi = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt) {
        raw_lo = fmaxf(raw_lo, fmaxf(s[mt][nt][0], s[mt][nt][1]));
        raw_hi = fmaxf(raw_hi, fmaxf(s[mt][nt][2], s[mt][nt][3]));
      }
      const float new_lo = fmaxf(row_m[mt][0], quad_max(raw_lo) * scale_log2);
      const float new_hi = fmaxf(row_m[mt][1], quad_max(raw_hi) * scale_log2);
      // A row that has read no key yet has max -inf: shift by 0 so its weights come out exp2(-inf) = 0, not NaN.
      const float use_lo = new_lo == -INFINITY ? 0.f : new_lo, use_hi = new_hi == -INFINITY ? 0.f : new_hi;
      const float corr_lo = exp2f(row_m[mt][0] - use_lo), corr_hi = exp2f(row_m[mt][1] - use_hi);
      row_m[mt][0] = new_lo, row_m[mt][1] = new_hi;
      row_l[mt][0] *= corr_lo, row_l[mt][1] *= corr_hi;
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt)
        o[mt][nt][0] *= corr_lo, o[mt][nt][1] *= corr_lo, o[mt][nt][2] *= corr_hi, o[mt][nt][3] *= corr_hi;
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt) {
        const float e0 = exp2f(fmaf(s[mt][nt][0], scale_log2, -use_lo));
        const float e1 = exp2f(fmaf(s[mt][nt][1], scale_log2, -use_lo));
        const float e2 = exp2f(fmaf(s[mt][nt][2], scale_log2, -use_hi));
        const float e3 = exp2f(fmaf(s[mt][nt][3], scale_log2, -use_hi));
        row_l[mt][0] += e0 + e1, row_l[mt][1] += e2 + e3;
        // The C fragments of two neighbouring 8-key tiles are the A fragment of one 16-key step.
        pa[mt][nt / 2][(nt % 2) * 2 + 0] = pack_bf16(e0, e1);
        pa[mt][nt / 2][(nt % 2) * 2 + 1] = pack_bf16(e2, e3);
      }
    }
    // O += P V: V's 16-key x 8-dim B fragments by transposed matrix loads, two dim tiles per load.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
#pragma unroll
      for (int nt = 0; nt < D / 8; nt += 2) {
        const int mat = lane / 8, r = lane % 8;
        const __nv_bfloat16* row = sV + (kk * 16 + (mat % 2) * 8 + r) * kStride + nt * 8 + (mat / 2) * 8;
        uint32_t b[4];
        ldmatrix_x4_trans(b, row);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16(o[mt][nt], pa[mt][kk], b[0], b[1]);
          mma_bf16(o[mt][nt + 1], pa[mt][kk], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before it is loaded again
    stage ^= 1;
    tile = following;
  }

  constexpr float kLn2 = 0.6931471805599453f;  // natural-log units for the merge and the probe
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const int64_t r_lo = row_of(mt, 0), r_hi = row_of(mt, 1);
    const float m_lo = row_m[mt][0], m_hi = row_m[mt][1];
    const float l_lo = quad_sum(row_l[mt][0]), l_hi = quad_sum(row_l[mt][1]);
    if (gridDim.z > 1) {  // a partial state: unnormalised P·V, max and sum, merged by merge_attention_splits
      const int64_t part = blockIdx.z * n * sh.n_heads;
#pragma unroll
      for (int nt = 0; nt < D / 8; ++nt) {
        const int c = nt * 8 + 2 * t;
        if (r_lo < n)
          *reinterpret_cast<float2*>(split.acc + (part + r_lo * sh.n_heads + head) * D + c) =
              make_float2(o[mt][nt][0], o[mt][nt][1]);
        if (r_hi < n)
          *reinterpret_cast<float2*>(split.acc + (part + r_hi * sh.n_heads + head) * D + c) =
              make_float2(o[mt][nt][2], o[mt][nt][3]);
      }
      if (t == 0) {
        if (r_lo < n)
          split.max[part + r_lo * sh.n_heads + head] = m_lo * kLn2, split.sum[part + r_lo * sh.n_heads + head] = l_lo;
        if (r_hi < n)
          split.max[part + r_hi * sh.n_heads + head] = m_hi * kLn2, split.sum[part + r_hi * sh.n_heads + head] = l_hi;
      }
      continue;
    }
    const float inv_lo = l_lo > 0.f ? 1.f / l_lo : 0.f, inv_hi = l_hi > 0.f ? 1.f / l_hi : 0.f;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      const int c = nt * 8 + 2 * t;
      if (r_lo < n)
        *reinterpret_cast<float2*>(seq.out + r_lo * q_stride + head * D + c) =
            make_float2(o[mt][nt][0] * inv_lo, o[mt][nt][1] * inv_lo);
      if (r_hi < n)
        *reinterpret_cast<float2*>(seq.out + r_hi * q_stride + head * D + c) =
            make_float2(o[mt][nt][2] * inv_hi, o[mt][nt][3] * inv_hi);
    }
    if (seq.row_max != nullptr && t == 0) {  // natural-log max and the sum, for the probe's column weights
      if (r_lo < n) seq.row_max[r_lo * sh.n_heads + head] = m_lo * kLn2, seq.row_sum[r_lo * sh.n_heads + head] = l_lo;
      if (r_hi < n) seq.row_max[r_hi * sh.n_heads + head] = m_hi * kLn2, seq.row_sum[r_hi * sh.n_heads + head] = l_hi;
    }
  }
}

// The form's dynamic shared memory, its limit raised once per form (beyond the 48 KB default).
template <int D, int kMT>
size_t configured_smem() {
  constexpr size_t smem = (size_t)(16 * kMT * (kThreads / 32) + 2 * 2 * kKeys) * (D + kPad) * sizeof(__nv_bfloat16);
  static const bool configured = [] {
    cudaFuncSetAttribute(flash_attention_kernel<D, kMT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    return true;
  }();
  (void)configured;
  return smem;
}

// Blocks of a form one multiprocessor holds at once, as its shared memory and registers allow; the launch bound
// (two) where the runtime cannot tell, e.g. without a device.
template <int D, int kMT>
int resident_blocks() {
  static const int blocks = [] {
    int n = 0;
    const size_t smem = configured_smem<D, kMT>();
    const bool known = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, flash_attention_kernel<D, kMT>, kThreads,
                                                                      smem) == cudaSuccess && n > 0;
    if (!known) cudaGetLastError();  // clear it: a later launch check must not report this query
    return known ? n : 2;
  }();
  return blocks;
}

template <int D, int kMT>
void launch(const AttentionShape& sh, const FlashSequence* seqs, const int2* blocks, int64_t n_blocks,
            const __nv_bfloat16* k, const __nv_bfloat16* v, const int32_t* k_pos, const int32_t* tile_pos,
            int64_t tiles, const KeySplits& split, int64_t splits, cudaStream_t stream) {
  const size_t smem = configured_smem<D, kMT>();
  const dim3 grid((unsigned)(n_blocks * sh.n_heads), 1, (unsigned)splits);
  flash_attention_kernel<D, kMT>
      <<<grid, kThreads, smem, stream>>>(sh, seqs, blocks, k, v, k_pos, tile_pos, tiles, split);
}

int multiprocessors() {
  static const int count = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 1;
  }();
  return count;
}

// The m-tiles per warp for a call whose rows make `wide_blocks` blocks of the two-tile form: two (a third less
// shared-memory traffic per MMA; 1.17x at 32K dense rows on an H100) unless that leaves under two waves of blocks
// (two per multiprocessor), where the one-tile form's twice as many blocks balance better. Measured on an H200
// with the blocks in global longest-first order: 1.4 waves (5% of 32K rows) 1.91 ms for one tile against 2.08
// for two; 3.4 waves (fusion's 4,087 rows at 27K, 28 layers) 187 against 177 ms. KVF_FLASH_WARP_ROWS=16 or 32
// forces a form, to measure both.
int warp_m_tiles(int64_t wide_blocks) {
  const char* forced = std::getenv("KVF_FLASH_WARP_ROWS");  // read per call: the tests run both forms
  if (forced != nullptr && std::strcmp(forced, "16") == 0) return 1;
  if (forced != nullptr && std::strcmp(forced, "32") == 0) return 2;
  return wide_blocks >= 2 * 2 * (int64_t)multiprocessors() ? 2 : 1;
}
int64_t row_tiles(int64_t n, int m_tiles) {
  const int64_t rows = 16 * m_tiles * (kThreads / 32);
  return (n + rows - 1) / rows;
}

int64_t key_tiles(int64_t m) { return (m + kKeys - 1) / kKeys; }

// Where a call's descriptors lie in its work buffer: the sequences, the (sequence, row tile) of each block, then
// the key tile bounds. Also the form the call runs (m-tiles per warp), which sets the row tiles.
struct WorkLayout {
  int m_tiles = 1;
  int64_t tiles = 0, row_blocks = 0, blocks_at = 0, tile_pos_at = 0, bytes = 0;
  explicit WorkLayout(const FlashSequence* seqs, int64_t n_seqs, int64_t heads) {
    int64_t wide_blocks = 0;
    for (int64_t s = 0; s < n_seqs; ++s) wide_blocks += row_tiles(seqs[s].n, 2) * heads;
    m_tiles = warp_m_tiles(wide_blocks);
    for (int64_t s = 0; s < n_seqs; ++s) tiles += key_tiles(seqs[s].m), row_blocks += row_tiles(seqs[s].n, m_tiles);
    blocks_at = n_seqs * (int64_t)sizeof(FlashSequence);
    tile_pos_at = blocks_at + row_blocks * (int64_t)sizeof(int2);
    bytes = tile_pos_at + 2 * tiles * (int64_t)sizeof(int32_t);
  }
};

}  // namespace

bool flash_attention_supports(int64_t head_dim) { return head_dim == 64 || head_dim == 128; }

int64_t flash_attention_blocks(const AttentionShape& sh) {
  return row_tiles(sh.n, warp_m_tiles(row_tiles(sh.n, 2) * sh.n_heads)) * sh.n_heads;
}

int64_t flash_attention_splits(const AttentionShape& sh, int multiprocessors) {
  // Few rows (a question over a long context) make too few blocks for the GPU unless the keys are split over
  // blocks, each split at least 8 tiles long. The count is chosen for the waves of resident blocks: 37 rows over
  // 26,981 keys on 132 multiprocessors (28 blocks, 422 tiles, 264 slots) take 9 splits, one wave of 47 tiles per
  // block, where the earlier rule (enough for two blocks per multiprocessor) took 10: 280 blocks, two waves of 43.
  // KVF_FLASH_SPLITS=N forces N, to measure counts side by side.
  const int64_t tiles = key_tiles(sh.m);
  if (const char* forced = std::getenv("KVF_FLASH_SPLITS"); forced != nullptr && std::atoll(forced) > 0)
    return std::max<int64_t>(1, std::min<int64_t>(std::atoll(forced), tiles));
  const bool wide = warp_m_tiles(row_tiles(sh.n, 2) * sh.n_heads) == 2;
  const int per_multiprocessor = sh.head_dim == 64 ? (wide ? resident_blocks<64, 2>() : resident_blocks<64, 1>())
                                                   : (wide ? resident_blocks<128, 2>() : resident_blocks<128, 1>());
  return fastest_key_splits(flash_attention_blocks(sh), tiles, (int64_t)per_multiprocessor * multiprocessors);
}

int64_t flash_attention_work_bytes(const FlashSequence* seqs, int64_t n_seqs) {
  // One head: the one-tile form, whose row tiles are the most, so the buffer has room for either form.
  return WorkLayout(seqs, n_seqs, 1).bytes;
}

void flash_attention(const AttentionShape& heads, const FlashSequence* seqs, int64_t n_seqs, const void* k_bf16,
                     const void* v_bf16, const int32_t* k_pos, void* work, int64_t splits, float* scratch,
                     cudaStream_t stream) {
  const WorkLayout layout(seqs, n_seqs, heads.n_heads);
  const int64_t block_rows = 16 * layout.m_tiles * (kThreads / 32);
  if (layout.row_blocks == 0 || heads.n_heads == 0) return;
  // The descriptors, each sequence's tiles numbered after the one before; the blocks with the last row tiles (the
  // latest positions, the most keys) of every sequence first, so the long blocks do not form the tail.
  std::vector<unsigned char> host((size_t)layout.tile_pos_at);
  FlashSequence* placed = reinterpret_cast<FlashSequence*>(host.data());
  int2* blocks = reinterpret_cast<int2*>(host.data() + layout.blocks_at);
  int64_t tile_first = 0, most_row_tiles = 0, at = 0;
  for (int64_t s = 0; s < n_seqs; ++s) {
    placed[s] = seqs[s];
    placed[s].tile_first = tile_first;
    tile_first += key_tiles(seqs[s].m);
    most_row_tiles = std::max(most_row_tiles, row_tiles(seqs[s].n, layout.m_tiles));
  }
  for (int64_t t = most_row_tiles - 1; t >= 0; --t)
    for (int64_t s = 0; s < n_seqs; ++s)
      if (t * block_rows < seqs[s].n) blocks[at++] = make_int2((int)s, (int)t);
  unsigned char* dev = static_cast<unsigned char*>(work);
  // From pageable memory: returns once the bytes are staged, so `host` may go.
  cudaMemcpyAsync(dev, host.data(), host.size(), cudaMemcpyHostToDevice, stream);
  const auto* dev_seqs = reinterpret_cast<const FlashSequence*>(dev);
  const auto* dev_blocks = reinterpret_cast<const int2*>(dev + layout.blocks_at);
  auto* tile_pos = reinterpret_cast<int32_t*>(dev + layout.tile_pos_at);
  if (layout.tiles > 0)
    key_tile_bounds_kernel<<<(unsigned)layout.tiles, 32, 0, stream>>>(dev_seqs, n_seqs, k_pos, layout.tiles, tile_pos);
  const auto* k = static_cast<const __nv_bfloat16*>(k_bf16);
  const auto* v = static_cast<const __nv_bfloat16*>(v_bf16);
  // Split over keys: one sequence only (flash_attention_splits), its partial states in scratch.
  AttentionShape one = heads;
  one.n = seqs[0].n, one.m = seqs[0].m;
  const int64_t cells = one.n * one.n_heads;
  KeySplits split;
  // Unsplit, every sequence reads all of its own tiles, however many: no bound from the first one's.
  split.tiles_per_split = splits > 1 ? (key_tiles(one.m) + splits - 1) / splits : INT32_MAX;
  if (splits > 1) split.max = scratch, split.sum = scratch + splits * cells, split.acc = scratch + 2 * splits * cells;
  const auto run = [&](auto kernel) {
    kernel(heads, dev_seqs, dev_blocks, at, k, v, k_pos, tile_pos, layout.tiles, split, splits, stream);
  };
  const bool wide = layout.m_tiles == 2;
  if (heads.head_dim == 64)
    wide ? run(launch<64, 2>) : run(launch<64, 1>);
  else
    wide ? run(launch<128, 2>) : run(launch<128, 1>);
  if (splits > 1) merge_attention_splits(one, splits, scratch, seqs[0].out, seqs[0].row_max, seqs[0].row_sum, stream);
}

}  // namespace kvf::cuda
