// Attention by the forward rule (DESIGN.md §3) in f32, without a mask: each (query row, head, key split) block
// walks its keys, skips those at later positions and keeps an online softmax (running max, sum and P·V) per warp;
// the warps' states are merged at the end, and the splits' states by a second kernel in a fixed order. GQA by
// mapping query head h to kv head h / (n_heads / n_kv_heads). The reference the tensor-core kernel
// (flash_attention.cu) is checked against, and the path for few rows (decoding, question-only probes).
#include <algorithm>
#include <cfloat>
#include <climits>

#include "cuda_ops.cuh"

namespace kvf::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int64_t kMinKeysPerSplit = 256;

__device__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// One (row, head, split): its max score, softmax sum and unnormalised P·V over keys [begin, end). With one split
// the row's output and statistics are written directly; with several, the partial state goes to scratch.
template <int kPerLane>  // head_dim <= 32 * kPerLane
__global__ void attention_kernel(AttentionShape sh, const float* q, const int32_t* q_pos, const float* k,
                                 const float* v, const int32_t* k_pos, int64_t keys_per_split, float* out,
                                 float* part_max, float* part_sum, float* part_acc, float* row_max, float* row_sum) {
  const int64_t row = blockIdx.x, head = blockIdx.y, split = blockIdx.z;
  const int64_t hd = sh.head_dim, kv_head = head / (sh.n_heads / sh.n_kv_heads);
  const int64_t begin = split * keys_per_split, end = min(sh.m, begin + keys_per_split);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* qr = q + (row * sh.n_heads + head) * hd;
  float qv[kPerLane], acc[kPerLane];
  for (int i = 0; i < kPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    qv[i] = d < hd ? qr[d] : 0.0f;
    acc[i] = 0.0f;
  }
  const int32_t p = q_pos[row];
  float m = -FLT_MAX, l = 0.0f;
  for (int64_t j = begin + warp; j < end; j += kWarps) {
    if (k_pos[j] > p) continue;
    const float* kj = k + (j * sh.n_kv_heads + kv_head) * hd;
    const float* vj = v + (j * sh.n_kv_heads + kv_head) * hd;
    float dot = 0.0f;
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      if (d < hd) dot += qv[i] * kj[d];
    }
    const float s = warp_sum(dot) * sh.scale;
    const float m_new = fmaxf(m, s);
    const float correction = __expf(m - m_new), e = __expf(s - m_new);
    l = l * correction + e;
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      acc[i] = acc[i] * correction + (d < hd ? e * vj[d] : 0.0f);
    }
    m = m_new;
  }
  __shared__ float warp_m[kWarps], warp_l[kWarps], warp_acc[kWarps][32 * kPerLane];
  if (lane == 0) warp_m[warp] = m, warp_l[warp] = l;
  for (int i = 0; i < kPerLane; ++i) warp_acc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  float block_max = -FLT_MAX;
  for (int w = 0; w < kWarps; ++w)
    if (warp_l[w] > 0.0f) block_max = fmaxf(block_max, warp_m[w]);
  float total = 0.0f, weight[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = warp_l[w] > 0.0f ? __expf(warp_m[w] - block_max) : 0.0f;
    total += warp_l[w] * weight[w];
  }
  const int64_t cell = row * sh.n_heads + head;
  if (gridDim.z == 1) {
    float* o = out + cell * hd;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float sum = 0.0f;
      for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * weight[w];
      o[d] = total > 0.0f ? sum / total : 0.0f;
    }
    if (row_max != nullptr && threadIdx.x == 0) row_max[cell] = block_max, row_sum[cell] = total;
    return;
  }
  const int64_t part = split * sh.n * sh.n_heads + cell;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float sum = 0.0f;
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * weight[w];
    part_acc[part * hd + d] = sum;
  }
  if (threadIdx.x == 0) part_max[part] = block_max, part_sum[part] = total;
}

// Merges the splits of one (row, head) in split order.
__global__ void merge_splits_kernel(AttentionShape sh, int64_t splits, const float* part_max, const float* part_sum,
                                    const float* part_acc, float* out, float* row_max, float* row_sum) {
  const int64_t cell = blockIdx.x, cells = sh.n * sh.n_heads, hd = sh.head_dim;
  float top = -FLT_MAX;
  for (int64_t s = 0; s < splits; ++s)
    if (part_sum[s * cells + cell] > 0.0f) top = fmaxf(top, part_max[s * cells + cell]);
  float total = 0.0f;
  for (int64_t s = 0; s < splits; ++s) {
    const float l = part_sum[s * cells + cell];
    if (l > 0.0f) total += l * __expf(part_max[s * cells + cell] - top);
  }
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float sum = 0.0f;
    for (int64_t s = 0; s < splits; ++s) {
      const float l = part_sum[s * cells + cell];
      if (l > 0.0f) sum += part_acc[(s * cells + cell) * hd + d] * __expf(part_max[s * cells + cell] - top);
    }
    out[cell * hd + d] = total > 0.0f ? sum / total : 0.0f;
  }
  if (row_max != nullptr && threadIdx.x == 0) row_max[cell] = top, row_sum[cell] = total;
}

// The probe rows' softmax weights summed per key. One block per tile of kProbeKeys keys: for each kv head the
// tile's K rows go to shared memory, and each warp walks (probe row, head) cells, every lane scoring two keys, so
// a block reads each query row once (one warp per key read every query row once per key: 37 rows of Qwen2.5-7B's
// 28 heads over 27K keys moved 14 GB through the caches). A key's sum runs in a fixed order (kv head, then the
// cells a warp takes, then the warps), so it repeats bit for bit.
constexpr int kProbeKeys = 64, kProbeWarps = 8;

__global__ void probe_colsum_kernel(AttentionShape sh, const float* q, const int32_t* q_pos, const float* k,
                                    const int32_t* k_pos, const int32_t* probe_rows, int64_t n_probe,
                                    const float* row_max, const float* row_sum, float* colsum, IndexError* err) {
  extern __shared__ float probe_smem[];
  const int64_t hd = sh.head_dim, group = sh.n_heads / sh.n_kv_heads, stride = hd + 1;  // +1: no bank conflicts
  float* tile = probe_smem;                          // [kProbeKeys][hd + 1]
  float* warp_sums = probe_smem + kProbeKeys * stride;  // [kProbeWarps][kProbeKeys]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t j0 = (int64_t)blockIdx.x * kProbeKeys;
  int32_t key_pos[2];
  for (int t = 0; t < 2; ++t) {
    const int64_t j = j0 + lane + 32 * t;
    key_pos[t] = j < sh.m ? k_pos[j] : INT_MAX;  // a key past the end is visible to no row
  }
  float sum[2] = {0.0f, 0.0f};
  for (int64_t g = 0; g < sh.n_kv_heads; ++g) {
    __syncthreads();  // the last kv head's tile is read by every warp
    for (int64_t e = threadIdx.x; e < kProbeKeys * hd; e += blockDim.x) {
      const int64_t r = e / hd, d = e % hd, j = j0 + r;
      tile[r * stride + d] = j < sh.m ? k[(j * sh.n_kv_heads + g) * hd + d] : 0.0f;
    }
    __syncthreads();
    for (int64_t c = warp; c < n_probe * group; c += kProbeWarps) {
      const int64_t i = c / group, h = g * group + c % group;
      const int32_t r = probe_rows[i];
      if (r < 0 || r >= sh.n) {
        if (blockIdx.x == 0 && g == 0 && c % group == 0 && lane == 0)
          report_index_error(err, kBadProbeRow, r, i, sh.n);
        continue;
      }
      bool repeated = false;  // the probe rows are a set: a row listed twice counts once
      for (int64_t e = 0; e < i && !repeated; ++e) repeated = probe_rows[e] == r;
      const int64_t cell = (int64_t)r * sh.n_heads + h;
      if (repeated || !(row_sum[cell] > 0.0f)) continue;
      const float* qr = q + cell * hd;
      float dot0 = 0.0f, dot1 = 0.0f;
      for (int64_t d = 0; d < hd; ++d) {
        const float qd = qr[d];  // the same address in every lane: one broadcast load
        dot0 += qd * tile[lane * stride + d];
        dot1 += qd * tile[(lane + 32) * stride + d];
      }
      const int32_t p = q_pos[r];
      const float m = row_max[cell], l = row_sum[cell];
      if (key_pos[0] <= p) sum[0] += __expf(dot0 * sh.scale - m) / l;
      if (key_pos[1] <= p) sum[1] += __expf(dot1 * sh.scale - m) / l;
    }
  }
  warp_sums[warp * kProbeKeys + lane] = sum[0];
  warp_sums[warp * kProbeKeys + lane + 32] = sum[1];
  __syncthreads();
  const int64_t j = j0 + threadIdx.x;
  if (threadIdx.x < kProbeKeys && j < sh.m) {
    float total = 0.0f;
    for (int w = 0; w < kProbeWarps; ++w) total += warp_sums[w * kProbeKeys + threadIdx.x];
    colsum[j] += total;
  }
}

}  // namespace

int64_t attention_splits(const AttentionShape& sh, int multiprocessors) {
  // Enough blocks for two per multiprocessor, each split at least kMinKeysPerSplit keys long.
  const int64_t cells = sh.n * sh.n_heads, want = cells > 0 ? (2 * (int64_t)multiprocessors + cells - 1) / cells : 1;
  const int64_t most = std::max<int64_t>(1, sh.m / kMinKeysPerSplit);
  return std::max<int64_t>(1, std::min(want, most));
}

void attention(const AttentionShape& sh, const float* q, const int32_t* q_pos, const float* k, const float* v,
               const int32_t* k_pos, float* out, int64_t splits, float* scratch, float* row_max, float* row_sum,
               cudaStream_t stream) {
  if (sh.n == 0 || sh.n_heads == 0) return;
  const int64_t keys_per_split = std::max<int64_t>(1, (sh.m + splits - 1) / splits);
  const int64_t cells = sh.n * sh.n_heads;
  float* part_max = scratch;
  float* part_sum = scratch ? scratch + splits * cells : nullptr;
  float* part_acc = scratch ? scratch + 2 * splits * cells : nullptr;
  const dim3 grid((unsigned)sh.n, (unsigned)sh.n_heads, (unsigned)splits), block(32 * kWarps);
  const auto run = [&](auto kernel) {
    kernel<<<grid, block, 0, stream>>>(sh, q, q_pos, k, v, k_pos, keys_per_split, out, part_max, part_sum, part_acc,
                                       row_max, row_sum);
  };
  if (sh.head_dim <= 32)
    run(attention_kernel<1>);
  else if (sh.head_dim <= 64)
    run(attention_kernel<2>);
  else if (sh.head_dim <= 128)
    run(attention_kernel<4>);
  else
    run(attention_kernel<8>);
  if (splits > 1) merge_attention_splits(sh, splits, scratch, out, row_max, row_sum, stream);
}

void merge_attention_splits(const AttentionShape& sh, int64_t splits, const float* scratch, float* out,
                            float* row_max, float* row_sum, cudaStream_t stream) {
  const int64_t cells = sh.n * sh.n_heads;
  if (cells == 0) return;
  merge_splits_kernel<<<(unsigned)cells, 128, 0, stream>>>(sh, splits, scratch, scratch + splits * cells,
                                                           scratch + 2 * splits * cells, out, row_max, row_sum);
}

void probe_colsums(const AttentionShape& sh, const float* q, const int32_t* q_pos, const float* k,
                   const int32_t* k_pos, const int32_t* probe_rows, int64_t n_probe, const float* row_max,
                   const float* row_sum, float* colsum, IndexError* err, cudaStream_t stream) {
  if (sh.m == 0 || n_probe == 0) return;
  const size_t smem = sizeof(float) * (size_t)(kProbeKeys * (sh.head_dim + 1) + kProbeWarps * kProbeKeys);
  if (smem > 48 * 1024)  // a head of more than 187 values: ask for more than the default
    cudaFuncSetAttribute(probe_colsum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  probe_colsum_kernel<<<(unsigned)((sh.m + kProbeKeys - 1) / kProbeKeys), 32 * kProbeWarps, smem, stream>>>(
      sh, q, q_pos, k, k_pos, probe_rows, n_probe, row_max, row_sum, colsum, err);
}

}  // namespace kvf::cuda
