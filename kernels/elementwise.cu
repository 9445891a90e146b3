// Row-wise and element-wise kernels of the CUDA backend: RMSNorm, residual add, bias, SwiGLU, row gathers and
// the bf16 conversions of the fast mode.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "cuda_ops.cuh"

namespace kvf::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) { return (int)((n + kThreads - 1) / kThreads); }

// An output value as f32 or rounded to bf16 (the fast mode's matmul inputs).
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// Four outputs at once: a float4, or four bf16 in 8 bytes.
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
  uint2 packed;
  packed.x = *reinterpret_cast<const uint32_t*>(&lo);
  packed.y = *reinterpret_cast<const uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(p) = packed;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One row per block; with kVec4 (d a multiple of 4, rows 16-byte aligned) each thread reads and writes four
// values at a time: the op is bound by memory, and 16-byte accesses move it at full width.
template <bool kVec4, typename Out>
__global__ void rms_norm_kernel(const float* x, const float* w, float eps, int64_t d, Out* y) {
  const float* xr = x + blockIdx.x * d;
  Out* yr = y + blockIdx.x * d;
  double local = 0;
  if constexpr (kVec4) {
    for (int64_t i = 4 * threadIdx.x; i < d; i += 4 * blockDim.x) {
      const float4 v = *reinterpret_cast<const float4*>(xr + i);
      local += (double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z + (double)v.w * v.w;
    }
  } else {
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) local += (double)xr[i] * (double)xr[i];
  }
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = (float)(1.0 / sqrt(partial[0] / (double)d + (double)eps));
  if constexpr (kVec4) {
    for (int64_t i = 4 * threadIdx.x; i < d; i += 4 * blockDim.x) {
      const float4 v = *reinterpret_cast<const float4*>(xr + i), g = *reinterpret_cast<const float4*>(w + i);
      store4(yr + i, make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w));
    }
  } else {
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) store(yr + i, xr[i] * scale * w[i]);
  }
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

// n4 float4s.
__global__ void add4_kernel(float4* y, const float4* x, int64_t n4) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 a = y[i];
    const float4 b = x[i];
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    y[i] = a;
  }
}

// One row per blockIdx.y: no division by the row width per element.
__global__ void add_bias_kernel(float* y, const float* bias, int64_t d) {
  float* row = y + blockIdx.y * d;
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < d; c += (int64_t)gridDim.x * blockDim.x)
    row[c] += bias[c];
}

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

template <typename In, typename Out>
__global__ void swiglu_kernel(const In* gate, const In* up, Out* out, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) store(out + i, silu_times(load(gate + i), load(up + i)));
}

// bf16 gate and up, eight values per thread (16-byte loads): the same arithmetic per element as swiglu_kernel.
template <typename Out>
__global__ void swiglu_bf16x8_kernel(const uint4* gate, const uint4* up, Out* out, int64_t n8) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n8) return;
  const uint4 g = gate[i], u = up[i];
  const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&g);
  const __nv_bfloat162* u2 = reinterpret_cast<const __nv_bfloat162*>(&u);
  float r[8];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 gf = __bfloat1622float2(g2[j]), uf = __bfloat1622float2(u2[j]);
    r[2 * j] = silu_times(gf.x, uf.x);
    r[2 * j + 1] = silu_times(gf.y, uf.y);
  }
  store4(out + 8 * i, make_float4(r[0], r[1], r[2], r[3]));
  store4(out + 8 * i + 4, make_float4(r[4], r[5], r[6], r[7]));
}

template <typename In>
void launch_swiglu(const In* gate, const In* up, void* out, bool out_bf16, int64_t n, cudaStream_t stream) {
  if (out_bf16)
    swiglu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, static_cast<__nv_bfloat16*>(out), n);
  else
    swiglu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, static_cast<float*>(out), n);
}

__global__ void gather_kernel(const char* src, int64_t src_rows, const int32_t* rows, int64_t row_bytes, char* dst,
                              IndexErrorCode code, IndexError* err) {
  const int32_t r = rows[blockIdx.x];
  if (r < 0 || r >= src_rows) {
    if (threadIdx.x == 0) report_index_error(err, code, r, blockIdx.x, src_rows);
    return;
  }
  const char* from = src + (int64_t)r * row_bytes;
  char* to = dst + (int64_t)blockIdx.x * row_bytes;
  for (int64_t b = threadIdx.x; b < row_bytes; b += blockDim.x) to[b] = from[b];
}

__global__ void gather_bf16_kernel(const __nv_bfloat16* table, int64_t table_rows, const int32_t* ids, int64_t d,
                                   float* dst, IndexError* err) {
  const int32_t r = ids[blockIdx.x];
  if (r < 0 || r >= table_rows) {
    if (threadIdx.x == 0) report_index_error(err, kBadTokenId, r, blockIdx.x, table_rows);
    return;
  }
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dst[blockIdx.x * d + i] = __bfloat162float(table[r * d + i]);
}

// Round to nearest even, as the CPU's f32_to_bf16.
__global__ void to_bf16_kernel(const float* src, int64_t d, __nv_bfloat16* dst) {
  const float* from = src + (int64_t)blockIdx.y * d;
  __nv_bfloat16* to = dst + (int64_t)blockIdx.y * d;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d; i += (int64_t)gridDim.x * blockDim.x)
    to[i] = __float2bfloat16_rn(from[i]);
}

__device__ inline void store_as(float x, __nv_bfloat16* dst) { *dst = __float2bfloat16_rn(x); }
__device__ inline void store_as(float x, float* dst) { *dst = x; }

// One staged row per block: find its key block (binary search over the blocks' first rows), then K and V. A row
// in no block (before the first, or in a gap after one) is left alone.
template <typename Out>
__global__ void stage_blocks_kernel(const StagedBlock* blocks, int n_blocks, int64_t d, Out* k_dst, Out* v_dst,
                                    int32_t* pos_dst, IndexError* err) {
  const int64_t r = blockIdx.x;
  int lo = 0, hi = n_blocks - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (blocks[mid].first <= r) lo = mid;
    else hi = mid - 1;
  }
  const StagedBlock& b = blocks[lo];
  const int64_t i = r - b.first;
  if (i < 0 || i >= b.count) return;
  const int64_t src = b.rows ? (int64_t)b.rows[i] : i;
  if (src < 0 || src >= b.src_rows) {
    if (threadIdx.x == 0) report_index_error(err, kBadGatherRow, src, i, b.src_rows);
    return;
  }
  if (threadIdx.x == 0 && pos_dst != nullptr) pos_dst[r] = b.pos[i];
  const float* k = b.k + src * d;
  const float* v = b.v + src * d;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    store_as(k[c], k_dst + r * d + c);
    store_as(v[c], v_dst + r * d + c);
  }
}

}  // namespace

void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t d, void* y, bool y_bf16,
              cudaStream_t stream) {
  if (rows == 0) return;
  const bool vec4 = d % 4 == 0 && aligned16(x) && aligned16(weight) && aligned16(y);
  const auto run = [&](auto kernel, auto* out) {
    kernel<<<(unsigned)rows, kThreads, 0, stream>>>(x, weight, eps, d, out);
  };
  auto* y_bf = static_cast<__nv_bfloat16*>(y);
  auto* y_f = static_cast<float*>(y);
  if (y_bf16)
    vec4 ? run(rms_norm_kernel<true, __nv_bfloat16>, y_bf) : run(rms_norm_kernel<false, __nv_bfloat16>, y_bf);
  else
    vec4 ? run(rms_norm_kernel<true, float>, y_f) : run(rms_norm_kernel<false, float>, y_f);
}

void add_inplace(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n % 4 == 0 && aligned16(y) && aligned16(x))
    add4_kernel<<<blocks_for(n / 4), kThreads, 0, stream>>>(reinterpret_cast<float4*>(y),
                                                          reinterpret_cast<const float4*>(x), n / 4);
  else
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t d, cudaStream_t stream) {
  if (rows * d == 0) return;
  const dim3 grid((unsigned)std::min<int64_t>((d + kThreads - 1) / kThreads, 16), (unsigned)rows);
  add_bias_kernel<<<grid, kThreads, 0, stream>>>(y, bias, d);
}

void swiglu(const void* gate, const void* up, bool in_bf16, void* out, bool out_bf16, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (in_bf16 && n % 8 == 0 && aligned16(gate) && aligned16(up) && aligned16(out)) {
    const auto* g = static_cast<const uint4*>(gate);
    const auto* u = static_cast<const uint4*>(up);
    if (out_bf16)
      swiglu_bf16x8_kernel<<<blocks_for(n / 8), kThreads, 0, stream>>>(g, u, static_cast<__nv_bfloat16*>(out), n / 8);
    else
      swiglu_bf16x8_kernel<<<blocks_for(n / 8), kThreads, 0, stream>>>(g, u, static_cast<float*>(out), n / 8);
  } else if (in_bf16) {
    launch_swiglu(static_cast<const __nv_bfloat16*>(gate), static_cast<const __nv_bfloat16*>(up), out, out_bf16, n,
                  stream);
  } else {
    launch_swiglu(static_cast<const float*>(gate), static_cast<const float*>(up), out, out_bf16, n, stream);
  }
}

void gather_rows(const void* src, int64_t src_rows, const int32_t* rows, int64_t n, int64_t row_bytes, void* dst,
                 IndexErrorCode code, IndexError* err, cudaStream_t stream) {
  if (n > 0 && row_bytes > 0)
    gather_kernel<<<(unsigned)n, 128, 0, stream>>>(static_cast<const char*>(src), src_rows, rows, row_bytes,
                                                   static_cast<char*>(dst), code, err);
}

void gather_bf16_rows_to_f32(const void* table, int64_t table_rows, const int32_t* ids, int64_t n, int64_t d,
                             float* dst, IndexError* err, cudaStream_t stream) {
  if (n > 0 && d > 0)
    gather_bf16_kernel<<<(unsigned)n, 128, 0, stream>>>(static_cast<const __nv_bfloat16*>(table), table_rows, ids, d,
                                                        dst, err);
}

void rows_to_bf16(const float* src, int64_t n, int64_t d, void* dst, cudaStream_t stream) {
  if (n == 0 || d == 0) return;
  const dim3 grid((unsigned)std::min<int64_t>((d + kThreads - 1) / kThreads, 8), (unsigned)n);
  to_bf16_kernel<<<grid, kThreads, 0, stream>>>(src, d, static_cast<__nv_bfloat16*>(dst));
}

void stage_blocks_bf16(const StagedBlock* blocks, int64_t n_blocks, int64_t m, int64_t d, void* k_dst, void* v_dst,
                       int32_t* pos_dst, IndexError* err, cudaStream_t stream) {
  if (m == 0 || n_blocks == 0) return;
  stage_blocks_kernel<<<(unsigned)m, 128, 0, stream>>>(blocks, (int)n_blocks, d, static_cast<__nv_bfloat16*>(k_dst),
                                                       static_cast<__nv_bfloat16*>(v_dst), pos_dst, err);
}

void stage_blocks_f32(const StagedBlock* blocks, int64_t n_blocks, int64_t m, int64_t d, float* k_dst, float* v_dst,
                      int32_t* pos_dst, IndexError* err, cudaStream_t stream) {
  if (m == 0 || n_blocks == 0) return;
  stage_blocks_kernel<<<(unsigned)m, 128, 0, stream>>>(blocks, (int)n_blocks, d, k_dst, v_dst, pos_dst, err);
}

}  // namespace kvf::cuda
