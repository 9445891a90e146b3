// The CUDA backend: tensors in device memory, GEMMs through cuBLAS (f32, no TF32), every other op a kernel from
// kernels/ (cuda_ops.cuh). Built when KVF_CUDA is on; checked op by op against the CPU backend
// (tests/unit/cuda_backend_test.cpp). Copies are synchronous; each op is queued on the backend's stream.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/op_checks.h"
#include "core/error.h"
#include "cuda_ops.cuh"

namespace kvf {
namespace {

void check_cuda(cudaError_t err, const char* what) {
  KVF_CHECK(err == cudaSuccess, "cuda: ", what, ": ", cudaGetErrorString(err));
}
void check_cublas(cublasStatus_t status, const char* what) {
  KVF_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublas: ", what, " failed (status ", (int)status, ")");
}

class CudaStorage final : public Storage {
 public:
  explicit CudaStorage(size_t bytes) {
    bytes_ = bytes;
    check_cuda(cudaMalloc(&data_, bytes ? bytes : 256), "cudaMalloc");
  }
  ~CudaStorage() override { cudaFree(data_); }
  Device device() const override { return Device::Cuda; }
};

void check_f32(const Tensor& t, const char* what) {
  KVF_CHECK(t.defined() && t.dtype == DType::F32 && t.device() == Device::Cuda, "cuda backend: ", what,
            " must be a defined f32 device tensor");
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check_cublas(cublasCreate(&blas_), "cublasCreate");
    check_cublas(cublasSetStream(blas_, stream_), "cublasSetStream");
    check_cublas(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");  // f32 as the CPU computes
  }
  ~CudaBackend() override {
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::Cuda; }

  Tensor empty(DType dtype, const Shape& shape) override {
    Tensor t;
    t.dtype = dtype;
    t.shape = shape;
    for (int64_t d : shape) KVF_CHECK(d >= 0, "cuda backend: negative dimension in shape ", shape_str(shape));
    t.storage = std::make_shared<CudaStorage>(t.nbytes());
    return t;
  }
  void copy_from_host(Tensor& dst, const void* src, size_t bytes) override {
    KVF_CHECK(bytes == dst.nbytes(), "copy_from_host: ", bytes, " bytes into a tensor of ", dst.nbytes());
    check_cuda(cudaStreamSynchronize(stream_), "sync before upload");
    if (bytes) check_cuda(cudaMemcpy(dst.data<char>(), src, bytes, cudaMemcpyHostToDevice), "upload");
  }
  void copy_to_host(const Tensor& src, void* dst, size_t bytes) override {
    KVF_CHECK(bytes == src.nbytes(), "copy_to_host: ", bytes, " bytes from a tensor of ", src.nbytes());
    check_cuda(cudaStreamSynchronize(stream_), "sync before download");
    if (bytes) check_cuda(cudaMemcpy(dst, src.data<char>(), bytes, cudaMemcpyDeviceToHost), "download");
  }
  void copy(const Tensor& src, Tensor& dst) override {
    KVF_CHECK(src.nbytes() == dst.nbytes(), "copy: ", src.nbytes(), " bytes into ", dst.nbytes());
    if (src.nbytes())
      check_cuda(cudaMemcpyAsync(dst.data<char>(), src.data<char>(), src.nbytes(), cudaMemcpyDeviceToDevice, stream_),
                 "device copy");
  }

  void matmul_nt(const Tensor& x, const Tensor& w, Tensor& y) override {
    check_f32(x, "matmul x");
    check_f32(w, "matmul w");
    check_f32(y, "matmul y");
    const auto [n, k, m] = matmul_dims(x, w, y);
    if (n == 0 || m == 0) return;
    // Row-major y[n, m] = x[n, k] w[m, k]^T is column-major y^T[m, n] = w^T... : op(A) = W^T as stored (k x m).
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, (int)m, (int)n, (int)k, &one, w.data<float>(), (int)k,
                             x.data<float>(), (int)k, &zero, y.data<float>(), (int)m),
                 "sgemm");
  }
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override {
    check_f32(x, "rms_norm x");
    const int64_t d = x.row_elems();
    KVF_CHECK(weight.numel() == d && y.numel() == x.numel(), "rms_norm: weight ", weight.numel(), ", rows of ", d);
    cuda::rms_norm(x.data<float>(), weight.data<float>(), eps, x.dim(0), d, y.data<float>(), stream_);
    launched("rms_norm");
  }
  void add_inplace(Tensor& y, const Tensor& x) override {
    KVF_CHECK(x.numel() == y.numel(), "add_inplace: ", shape_str(x.shape), " and ", shape_str(y.shape));
    cuda::add_inplace(y.data<float>(), x.data<float>(), y.numel(), stream_);
    launched("add_inplace");
  }
  void add_bias(Tensor& y, const Tensor& bias) override {
    KVF_CHECK(bias.numel() == y.row_elems(), "add_bias: bias of ", bias.numel(), " for rows of ", y.row_elems());
    cuda::add_bias(y.data<float>(), bias.data<float>(), y.dim(0), y.row_elems(), stream_);
    launched("add_bias");
  }
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
    KVF_CHECK(gate.numel() == up.numel() && gate.numel() == out.numel(), "swiglu: shapes differ");
    cuda::swiglu(gate.data<float>(), up.data<float>(), out.data<float>(), gate.numel(), stream_);
    launched("swiglu");
  }
  void embedding(const Tensor& table, const Tensor& ids, Tensor& out) override {
    KVF_CHECK(ids.dtype == DType::I32, "embedding: ids must be i32");
    const int64_t n = ids.numel(), d = table.row_elems();
    KVF_CHECK(out.dim(0) == n && out.row_elems() == d, "embedding: out ", shape_str(out.shape));
    const std::vector<int32_t> host = download_i32(ids);
    for (int64_t i = 0; i < n; ++i)
      KVF_CHECK(host[i] >= 0 && host[i] < table.dim(0), "token id ", host[i], " at index ", i,
                " is outside the vocabulary of ", table.dim(0));
    cuda::gather_rows(table.data<char>(), ids.data<int32_t>(), n, d * (int64_t)dtype_size(table.dtype),
                      out.data<char>(), stream_);
    launched("embedding");
  }
  void gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) override {
    KVF_CHECK(rows.dtype == DType::I32 && src.dtype == dst.dtype, "gather_rows: bad dtypes");
    const int64_t n = rows.numel();
    const int64_t row_bytes = src.row_elems() * (int64_t)dtype_size(src.dtype);
    KVF_CHECK(dst.dim(0) == n && dst.row_elems() * (int64_t)dtype_size(dst.dtype) == row_bytes, "gather_rows: dst ",
              shape_str(dst.shape), " for ", n, " rows of ", shape_str(src.shape));
    const std::vector<int32_t> host = download_i32(rows);
    for (int64_t i = 0; i < n; ++i)
      KVF_CHECK(host[i] >= 0 && host[i] < src.dim(0), "gather_rows: row ", host[i], " outside [0, ", src.dim(0), ")");
    cuda::gather_rows(src.data<char>(), rows.data<int32_t>(), n, row_bytes, dst.data<char>(), stream_);
    launched("gather_rows");
  }
  void rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) override {
    check_f32(x, "rope x");
    KVF_CHECK(x.shape.size() == 3 && pos.numel() == x.dim(0), "rope: x ", shape_str(x.shape), " with ", pos.numel(),
              " positions");
    KVF_CHECK(spec.inv_freq && (int64_t)spec.inv_freq->size() == spec.rotary_dim / 2 && spec.rotary_dim <= x.dim(2),
              "rope: rotary_dim ", spec.rotary_dim, " does not fit head_dim ", x.dim(2));
    for (int32_t p : download_i32(pos)) KVF_CHECK(p >= 0, "rope: negative position ", p);
    cuda::rope(x.data<float>(), pos.data<int32_t>(), x.dim(0), x.dim(1), x.dim(2), spec.rotary_dim,
               frequencies(spec).data<float>(), spec.pairing == RopePairing::Adjacent, inverse, stream_);
    launched("rope");
  }
  void attention(AttentionArgs& a) override {
    const AttentionDims dims = attention_dims(a);
    KVF_CHECK(dims.head_dim <= 256, "attention: head_dim ", dims.head_dim, " above the supported 256");
    cuda::AttentionShape sh;
    sh.n = dims.n, sh.m = dims.m, sh.n_heads = dims.n_heads, sh.n_kv_heads = dims.n_kv_heads;
    sh.head_dim = dims.head_dim, sh.scale = a.scale;
    Tensor flags;
    float* colsum = nullptr;
    if (dims.probing) {
      std::vector<uint8_t> is_probe((size_t)sh.n, 0);
      for (int32_t r : download_i32(a.probe_rows)) {
        KVF_CHECK(r >= 0 && r < sh.n, "attention: probe row ", r, " outside [0, ", sh.n, ")");
        is_probe[(size_t)r] = 1;
      }
      flags = empty(DType::I8, {sh.n});
      copy_from_host(flags, is_probe.data(), is_probe.size());
      colsum = a.probe_colsum.data<float>();
    }
    cuda::attention(sh, a.q.data<float>(), a.q_pos.data<int32_t>(), a.k.data<float>(), a.v.data<float>(),
                    a.k_pos.data<int32_t>(), a.out.data<float>(), flags.defined() ? flags.data<uint8_t>() : nullptr,
                    colsum, stream_);
    launched("attention");
    if (flags.defined()) check_cuda(cudaStreamSynchronize(stream_), "attention");  // flags freed on return
  }

 private:
  void launched(const char* what) { check_cuda(cudaGetLastError(), what); }
  std::vector<int32_t> download_i32(const Tensor& t) {
    std::vector<int32_t> host((size_t)t.numel());
    copy_to_host(t, host.data(), host.size() * sizeof(int32_t));
    return host;
  }
  // inv_freq on the device, uploaded once per RopeSpec.
  const Tensor& frequencies(const RopeSpec& spec) {
    auto it = inv_freq_.find(spec.inv_freq.get());
    if (it == inv_freq_.end()) {
      Tensor t = empty(DType::F32, {(int64_t)spec.inv_freq->size()});
      copy_from_host(t, spec.inv_freq->data(), t.nbytes());
      it = inv_freq_.emplace(spec.inv_freq.get(), std::move(t)).first;
      keep_.push_back(spec.inv_freq);
    }
    return it->second;
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::map<const void*, Tensor> inv_freq_;
  std::vector<std::shared_ptr<const std::vector<float>>> keep_;  // so a cached pointer is never reused
};

}  // namespace

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (why) *why = err != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(err)
                                       : std::string("no CUDA device");
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend() {
  std::string why;
  KVF_CHECK(cuda_device_available(&why), "cuda backend: ", why);
  return std::make_unique<CudaBackend>();
}

}  // namespace kvf
