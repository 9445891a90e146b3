// RoPE at arbitrary positions, both pairings, forward and inverse (removing RoPE from stored keys).
#include "cuda_ops.cuh"

namespace kvf::cuda {
namespace {

__global__ void rope_kernel(const float* src, float* x, const int32_t* pos, int64_t period, int64_t heads,
                            int64_t head_dim, int64_t half, const float* inv_freq, float magnitude, bool adjacent,
                            bool inverse, IndexError* err) {
  const int64_t row = blockIdx.x, head = blockIdx.y;
  const int32_t position = pos[row % period];
  if (position < 0) {
    if (head == 0 && threadIdx.x == 0) report_index_error(err, kNegativePosition, position, row, 0);
    return;
  }
  float* v = x + (row * heads + head) * head_dim;
  const float* u = src + (row * heads + head) * head_dim;
  if (u != v)  // the dims RoPE leaves alone
    for (int64_t i = 2 * half + threadIdx.x; i < head_dim; i += blockDim.x) v[i] = u[i];
  // Angles in double: positions reach 1e5 and a float product would lose the phase's low bits.
  const double p = (double)position;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const double angle = p * (double)inv_freq[i];
    float c = (float)cos(angle), s = inverse ? -(float)sin(angle) : (float)sin(angle);
    if (magnitude != 1.0f) {  // YaRN's attention scaling: times magnitude, the inverse divided by it
      const float m = inverse ? 1.0f / magnitude : magnitude;
      c *= m;
      s *= m;
    }
    const int64_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
    const float x0 = u[a], x1 = u[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
  }
}

}  // namespace

void rope(const float* src, float* x, const int32_t* pos, int64_t period, int64_t n, int64_t heads,
          int64_t head_dim, int64_t rotary_dim, const float* inv_freq, float magnitude, bool adjacent, bool inverse,
          IndexError* err, cudaStream_t stream) {
  if (n == 0 || heads == 0 || rotary_dim == 0) return;
  const dim3 grid((unsigned)n, (unsigned)heads);
  rope_kernel<<<grid, 64, 0, stream>>>(src, x, pos, period, heads, head_dim, rotary_dim / 2, inv_freq, magnitude,
                                                adjacent, inverse, err);
}

}  // namespace kvf::cuda
