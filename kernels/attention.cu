// Attention by the forward rule (DESIGN.md §3) without a mask: each (query row, head) block walks the keys, skips
// those at later positions and keeps an online softmax (running max, sum and P·V) per warp; the warps' partial
// states are merged at the end. GQA by mapping query head h to kv head h / (n_heads / n_kv_heads).
// A first, correctness-first kernel: one block per row and head; tiled Q-index prefill comes next.
#include <cfloat>

#include "cuda_ops.cuh"

namespace kvf::cuda {
namespace {

constexpr int kWarps = 4;

__device__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <int kPerLane>  // head_dim <= 32 * kPerLane
__global__ void attention_kernel(AttentionShape sh, const float* q, const int32_t* q_pos, const float* k,
                                 const float* v, const int32_t* k_pos, float* out, const uint8_t* is_probe,
                                 float* probe_colsum) {
  const int64_t row = blockIdx.x, head = blockIdx.y;
  const int64_t hd = sh.head_dim, kv_head = head / (sh.n_heads / sh.n_kv_heads);
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
  for (int64_t j = warp; j < sh.m; j += kWarps) {
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
  float row_max = -FLT_MAX;
  for (int w = 0; w < kWarps; ++w)
    if (warp_l[w] > 0.0f) row_max = fmaxf(row_max, warp_m[w]);
  float total = 0.0f, weight[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = warp_l[w] > 0.0f ? __expf(warp_m[w] - row_max) : 0.0f;
    total += warp_l[w] * weight[w];
  }
  float* o = out + (row * sh.n_heads + head) * hd;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float sum = 0.0f;
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * weight[w];
    o[d] = total > 0.0f ? sum / total : 0.0f;
  }
  if (probe_colsum == nullptr || !is_probe[row] || total <= 0.0f) return;
  // The probe needs each key's final weight: recompute its score once the row's max and sum are known.
  for (int64_t j = threadIdx.x; j < sh.m; j += blockDim.x) {
    if (k_pos[j] > p) continue;
    const float* kj = k + (j * sh.n_kv_heads + kv_head) * hd;
    float dot = 0.0f;
    for (int64_t d = 0; d < hd; ++d) dot += qr[d] * kj[d];
    atomicAdd(&probe_colsum[j], __expf(dot * sh.scale - row_max) / total);
  }
}

}  // namespace

void attention(const AttentionShape& sh, const float* q, const int32_t* q_pos, const float* k, const float* v,
               const int32_t* k_pos, float* out, const uint8_t* is_probe, float* probe_colsum, cudaStream_t stream) {
  if (sh.n == 0 || sh.n_heads == 0) return;
  const dim3 grid((unsigned)sh.n, (unsigned)sh.n_heads), block(32 * kWarps);
  if (sh.head_dim <= 32)
    attention_kernel<1><<<grid, block, 0, stream>>>(sh, q, q_pos, k, v, k_pos, out, is_probe, probe_colsum);
  else if (sh.head_dim <= 64)
    attention_kernel<2><<<grid, block, 0, stream>>>(sh, q, q_pos, k, v, k_pos, out, is_probe, probe_colsum);
  else if (sh.head_dim <= 128)
    attention_kernel<4><<<grid, block, 0, stream>>>(sh, q, q_pos, k, v, k_pos, out, is_probe, probe_colsum);
  else
    attention_kernel<8><<<grid, block, 0, stream>>>(sh, q, q_pos, k, v, k_pos, out, is_probe, probe_colsum);
}

}  // namespace kvf::cuda
