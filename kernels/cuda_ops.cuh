// Launchers of the CUDA kernels behind the CUDA backend (lib/backend/cuda). Every pointer is a device pointer;
// every launch goes to `stream` and returns without waiting. Shapes follow the Backend interface
// (lib/backend/backend.h); the CPU backend is the reference each kernel is checked against
// (tests/unit/cuda_backend_test.cpp).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace kvf::cuda {

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, rows of d (sum of squares in double, as the CPU reference).
void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t d, float* y, cudaStream_t stream);
// y += x
void add_inplace(float* y, const float* x, int64_t n, cudaStream_t stream);
// y[r, :] += bias
void add_bias(float* y, const float* bias, int64_t rows, int64_t d, cudaStream_t stream);
// out = silu(gate) * up
void swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);
// dst[i] = src[rows[i]], rows of row_bytes bytes (embedding lookups and KV gathers); rows already validated.
void gather_rows(const void* src, const int32_t* rows, int64_t n, int64_t row_bytes, void* dst, cudaStream_t stream);

// x [n, heads, head_dim] rotated in place to positions pos [n]: the first rotary_dim dims of each head, pairs
// (2i, 2i+1) when adjacent, else (i, i + rotary_dim/2); angles p * inv_freq[i] in double; inverse: -angle.
void rope(float* x, const int32_t* pos, int64_t n, int64_t heads, int64_t head_dim, int64_t rotary_dim,
          const float* inv_freq, bool adjacent, bool inverse, cudaStream_t stream);

// The forward rule's attention (DESIGN.md §3) over gathered keys: query row r (position q_pos[r], head h) reads
// every key j with k_pos[j] <= q_pos[r] of kv head h / (n_heads / n_kv_heads); scores scaled, online softmax
// over the keys (no mask is built), P·V. A row that sees no key outputs zeros. When probe_colsum is given, the
// rows with is_probe[r] != 0 add their softmax weights to probe_colsum[j], summed over heads.
struct AttentionShape {
  int64_t n = 0, m = 0;  // query rows, keys
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
};
void attention(const AttentionShape& shape, const float* q, const int32_t* q_pos, const float* k, const float* v,
               const int32_t* k_pos, float* out, const uint8_t* is_probe, float* probe_colsum, cudaStream_t stream);

}  // namespace kvf::cuda
