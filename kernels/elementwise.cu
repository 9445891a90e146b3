// Row-wise and element-wise kernels of the CUDA backend: RMSNorm, residual add, bias, SwiGLU, row gathers.
#include "cuda_ops.cuh"

namespace kvf::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) { return (int)((n + kThreads - 1) / kThreads); }

__global__ void rms_norm_kernel(const float* x, const float* w, float eps, int64_t d, float* y) {
  const float* xr = x + blockIdx.x * d;
  float* yr = y + blockIdx.x * d;
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
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * scale * w[i];
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void add_bias_kernel(float* y, const float* bias, int64_t n, int64_t d) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] += bias[i % d];
}

__global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void gather_kernel(const char* src, const int32_t* rows, int64_t row_bytes, char* dst) {
  const char* from = src + (int64_t)rows[blockIdx.x] * row_bytes;
  char* to = dst + (int64_t)blockIdx.x * row_bytes;
  for (int64_t b = threadIdx.x; b < row_bytes; b += blockDim.x) to[b] = from[b];
}

}  // namespace

void rms_norm(const float* x, const float* weight, float eps, int64_t rows, int64_t d, float* y, cudaStream_t stream) {
  if (rows > 0) rms_norm_kernel<<<(unsigned)rows, kThreads, 0, stream>>>(x, weight, eps, d, y);
}

void add_inplace(float* y, const float* x, int64_t n, cudaStream_t stream) {
  if (n > 0) add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t d, cudaStream_t stream) {
  if (rows * d > 0) add_bias_kernel<<<blocks_for(rows * d), kThreads, 0, stream>>>(y, bias, rows * d, d);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n > 0) swiglu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, out, n);
}

void gather_rows(const void* src, const int32_t* rows, int64_t n, int64_t row_bytes, void* dst, cudaStream_t stream) {
  if (n > 0 && row_bytes > 0)
    gather_kernel<<<(unsigned)n, 128, 0, stream>>>(static_cast<const char*>(src), rows, row_bytes,
                                                   static_cast<char*>(dst));
}

}  // namespace kvf::cuda
