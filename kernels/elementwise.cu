// Row-wise and element-wise kernels of the CUDA backend: RMSNorm, residual add, bias, SwiGLU, row gathers and
// the bf16 conversions of the fast mode.
#include <cuda_bf16.h>

#include <algorithm>

#include "cuda_ops.cuh"

namespace kvf::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) { return (int)((n + kThreads - 1) / kThreads); }

// An output value as f32 or rounded to bf16 (the fast mode's matmul inputs).
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <typename Out>
__global__ void rms_norm_kernel(const float* x, const float* w, float eps, int64_t d, Out* y) {
  const float* xr = x + blockIdx.x * d;
  Out* yr = y + blockIdx.x * d;
  double local = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) local += (double)xr[i] * (double)xr[i];
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = (float)(1.0 / sqrt(partial[0] / (double)d + (double)eps));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) store(yr + i, xr[i] * scale * w[i]);
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void add_bias_kernel(float* y, const float* bias, int64_t n, int64_t d) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] += bias[i % d];
}

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

template <typename In, typename Out>
__global__ void swiglu_kernel(const In* gate, const In* up, Out* out, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {
    const float g = load(gate + i);
    store(out + i, g / (1.0f + expf(-g)) * load(up + i));
  }
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

// One staged row per block: find its key block (binary search over the blocks' first rows), then K and V.
__global__ void stage_blocks_kernel(const StagedBlock* blocks, int n_blocks, int64_t d, __nv_bfloat16* k_dst,
                                    __nv_bfloat16* v_dst, int32_t* pos_dst, IndexError* err) {
  const int64_t r = blockIdx.x;
  int lo = 0, hi = n_blocks - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (blocks[mid].first <= r) lo = mid;
    else hi = mid - 1;
  }
  const StagedBlock& b = blocks[lo];
  const int64_t i = r - b.first;
  const int64_t src = b.rows ? (int64_t)b.rows[i] : i;
  if (src < 0 || src >= b.src_rows) {
    if (threadIdx.x == 0) report_index_error(err, kBadGatherRow, src, i, b.src_rows);
    return;
  }
  if (threadIdx.x == 0) pos_dst[r] = b.pos[i];
  const float* k = b.k + src * d;
  const float* v = b.v + src * d;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    k_dst[r * d + c] = __float2bfloat16_rn(k[c]);
    v_dst[r * d + c] = __float2bfloat16_rn(v[c]);
  }
}

}  // namespace

void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t d, void* y, bool y_bf16,
              cudaStream_t stream) {
  if (rows == 0) return;
  if (y_bf16)
    rms_norm_kernel<<<(unsigned)rows, kThreads, 0, stream>>>(x, weight, eps, d, static_cast<__nv_bfloat16*>(y));
  else
    rms_norm_kernel<<<(unsigned)rows, kThreads, 0, stream>>>(x, weight, eps, d, static_cast<float*>(y));
}

void add_inplace(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n > 0) add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t d, cudaStream_t stream) {
  if (rows * d > 0) add_bias_kernel<<<blocks_for(rows * d), kThreads, 0, stream>>>(y, bias, rows * d, d);
}

void swiglu(const void* gate, const void* up, bool in_bf16, void* out, bool out_bf16, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (in_bf16)
    launch_swiglu(static_cast<const __nv_bfloat16*>(gate), static_cast<const __nv_bfloat16*>(up), out, out_bf16, n,
                  stream);
  else
    launch_swiglu(static_cast<const float*>(gate), static_cast<const float*>(up), out, out_bf16, n, stream);
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

}  // namespace kvf::cuda
