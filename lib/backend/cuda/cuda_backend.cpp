// The CUDA backend: tensors in device memory from a stream-ordered pool, every op queued on one stream with no
// host synchronisation until a result is read back (indices are checked on the device: cuda_ops.cuh). GEMMs:
// bf16 weights through cuBLASLt (bf16 inputs, f32 accumulate and output) in the fast mode, f32 weights through
// cuBLAS sgemm without TF32 in the f32 mode. Attention: the tensor-core Q-index kernel for the fast mode's
// prefills, the f32 kernel (split over keys when rows are few) otherwise. Checked op by op against the CPU backend
// (tests/unit/cuda_backend_test.cpp).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
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

// The stream every op and allocation is ordered on; storages hold it so it outlives the last tensor freed.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s); }
};

// Device memory from the stream-ordered pool: allocated in the order of one stream, freed in the order of another
// (the same one, except for a loading lane's tensors, which its parent's work reads and frees).
class CudaStorage final : public Storage {
 public:
  CudaStorage(size_t bytes, const Stream& allocate_on, std::shared_ptr<Stream> free_on) : free_on_(std::move(free_on)) {
    bytes_ = bytes;
    check_cuda(cudaMallocAsync(&data_, bytes ? bytes : 256, allocate_on.s), "cudaMallocAsync");
  }
  ~CudaStorage() override { cudaFreeAsync(data_, free_on_->s); }
  Device device() const override { return Device::Cuda; }

 private:
  std::shared_ptr<Stream> free_on_;
};

// Large uploads pass through two pinned host buffers in turn: the host copies the next piece while the DMA engine
// sends the last, and the call returns without waiting for the device to reach the copy (from pageable memory
// the driver may hold the caller until it does). One upload at a time per backend.
class PinnedStaging {
 public:
  static constexpr size_t kPiece = 8 << 20;
  ~PinnedStaging() {
    for (int b = 0; b < 2; ++b)
      if (buffer_[b]) cudaEventSynchronize(done_[b]), cudaEventDestroy(done_[b]), cudaFreeHost(buffer_[b]);
  }
  void upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int b = 0; b < 2 && !buffer_[b]; ++b) {
      check_cuda(cudaHostAlloc(&buffer_[b], kPiece, cudaHostAllocDefault), "pinned staging buffer");
      check_cuda(cudaEventCreateWithFlags(&done_[b], cudaEventDisableTiming), "staging event");
    }
    for (size_t at = 0, piece = 0; at < bytes; at += kPiece, ++piece) {
      const int b = (int)(piece % 2);
      const size_t n = std::min(kPiece, bytes - at);
      check_cuda(cudaEventSynchronize(done_[b]), "staging buffer wait");  // the DMA that last read it is done
      std::memcpy(buffer_[b], static_cast<const char*>(src) + at, n);
      check_cuda(cudaMemcpyAsync(static_cast<char*>(dst) + at, buffer_[b], n, cudaMemcpyHostToDevice, stream),
                 "upload");
      check_cuda(cudaEventRecord(done_[b], stream), "staging event");
    }
  }

 private:
  std::mutex mutex_;
  void* buffer_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
};

void check_on_device(const Tensor& t, DType dtype, const char* what) {
  KVF_CHECK(t.defined() && t.dtype == dtype && t.device() == Device::Cuda, "cuda backend: ", what, " must be a defined ",
            dtype_name(dtype), " device tensor");
}
void check_f32(const Tensor& t, const char* what) { check_on_device(t, DType::F32, what); }
void check_f32_or_bf16(const Tensor& t, const char* what) {
  check_on_device(t, t.dtype == DType::BF16 ? DType::BF16 : DType::F32, what);
}
// x and y f32, or bf16 for bf16 weights (matmul_input_dtype).
void check_matmul_input(const Tensor& x, const Tensor& w) {
  check_on_device(x, x.dtype == DType::BF16 && w.dtype == DType::BF16 ? DType::BF16 : DType::F32, "matmul x");
}
void check_matmul_output(const Tensor& y, const Tensor& w) {
  check_on_device(y, y.dtype == DType::BF16 && w.dtype == DType::BF16 ? DType::BF16 : DType::F32, "matmul y");
}

// Largest power of two (up to 256) dividing the address: what cuBLASLt may assume of a pointer.
uint32_t alignment_of(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a) a /= 2;
  return a;
}

// Query rows from which attention takes the tensor-core kernel in the fast mode; fewer go to the f32 kernel,
// split over keys (decoding, short questions).
constexpr int64_t kFlashMinRows = 16;

class CudaBackend final : public Backend {
 public:
  CudaBackend() : CudaBackend(nullptr) {}
  // free_on: the stream that frees this backend's tensors (null: its own). A loading lane frees on its parent's.
  explicit CudaBackend(std::shared_ptr<Stream> free_on)
      : stream_(std::make_shared<Stream>()), free_on_(free_on ? std::move(free_on) : stream_) {
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device), "device attribute");
    // Keep freed blocks in the pool: a forward pass allocates and frees the same sizes layer after layer.
    cudaMemPool_t pool;
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "memory pool threshold");
    // A block freed in one stream's order is reused by another only once that free has happened: otherwise the
    // pool makes the allocating stream wait for the freeing one, and a loading lane's uploads (its tensors are
    // freed in the compute stream's order) would queue behind the query's compute instead of overlapping it.
    int no = 0;
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no), "memory pool reuse");
    check_cublas(cublasCreate(&blas_), "cublasCreate");
    check_cublas(cublasSetStream(blas_, s()), "cublasSetStream");
    check_cublas(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");  // f32 as the CPU computes
    check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
    workspace_ = empty(DType::I8, {kWorkspaceBytes});
    errors_ = empty(DType::I8, {(int64_t)sizeof(cuda::IndexError)});
    check_cuda(cudaMemsetAsync(errors_.data<char>(), 0, sizeof(cuda::IndexError), s()), "clear error word");
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(s());
    for (auto& [key, plan] : lt_plans_) plan.destroy();
    cublasLtDestroy(lt_);
    cublasDestroy(blas_);
  }
  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::Cuda; }
  bool accepts_weights(DType dtype, int64_t row_elems) const override {
    (void)row_elems;
    return dtype == DType::F32 || dtype == DType::BF16;
  }

  Tensor empty(DType dtype, const Shape& shape) override {
    Tensor t;
    t.dtype = dtype;
    t.shape = shape;
    for (int64_t d : shape) KVF_CHECK(d >= 0, "cuda backend: negative dimension in shape ", shape_str(shape));
    t.storage = std::make_shared<CudaStorage>(t.nbytes(), *stream_, free_on_);
    return t;
  }
  // Queued on the stream; the call returns once `src` is copied out, so it may go. Small uploads (descriptors,
  // indices) go as they are, large ones (chunk KV) through the pinned staging buffers.
  void copy_from_host(Tensor& dst, const void* src, size_t bytes) override {
    KVF_CHECK(bytes == dst.nbytes(), "copy_from_host: ", bytes, " bytes into a tensor of ", dst.nbytes());
    if (bytes >= kPinnedFrom) return staging_.upload(dst.data<char>(), src, bytes, s());
    if (bytes) check_cuda(cudaMemcpyAsync(dst.data<char>(), src, bytes, cudaMemcpyHostToDevice, s()), "upload");
  }
  // The host waits for the device here and in synchronize(), so those are where a bad index met on the device
  // is reported.
  void copy_to_host(const Tensor& src, void* dst, size_t bytes) override {
    KVF_CHECK(bytes == src.nbytes(), "copy_to_host: ", bytes, " bytes from a tensor of ", src.nbytes());
    if (bytes) check_cuda(cudaMemcpyAsync(dst, src.data<char>(), bytes, cudaMemcpyDeviceToHost, s()), "download");
    synchronize();
  }
  // Waits, and reports a bad index met since the last wait.
  void synchronize() override {
    cuda::IndexError err;
    check_cuda(cudaMemcpyAsync(&err, errors_.data<char>(), sizeof err, cudaMemcpyDeviceToHost, s()), "error word");
    check_cuda(cudaStreamSynchronize(s()), "synchronize");
    if (err.code != cuda::kNoError) {
      check_cuda(cudaMemsetAsync(errors_.data<char>(), 0, sizeof err, s()), "clear error word");
      throw_index_error(err);
    }
  }
  // A second CudaBackend on its own stream, made on first use: a loader thread's uploads and reorders run there,
  // beside this backend's compute (FusionRAG §4.2). Its tensors are freed in this backend's stream order, after the
  // work of this backend that reads them.
  Backend& loading_lane() override {
    std::call_once(lane_made_, [this] { lane_ = std::make_unique<CudaBackend>(stream_); });
    return *lane_;
  }
  void copy(const Tensor& src, Tensor& dst) override {
    KVF_CHECK(src.nbytes() == dst.nbytes(), "copy: ", src.nbytes(), " bytes into ", dst.nbytes());
    if (src.nbytes())
      check_cuda(cudaMemcpyAsync(dst.data<char>(), src.data<char>(), src.nbytes(), cudaMemcpyDeviceToDevice, s()),
                 "device copy");
  }

  DType matmul_input_dtype(const Tensor& w) const override {
    return w.dtype == DType::BF16 ? DType::BF16 : DType::F32;
  }
  void matmul_nt(const Tensor& x, const Tensor& w, Tensor& y, Batching = Batching::Shared) override {
    check_matmul_output(y, w);
    KVF_CHECK(w.defined() && w.device() == Device::Cuda && (w.dtype == DType::F32 || w.dtype == DType::BF16),
              "cuda backend: matmul w must be an f32 or bf16 device tensor");
    check_matmul_input(x, w);
    const auto [n, k, m] = matmul_dims(x, w, y);
    if (n == 0 || m == 0) return;
    if (w.dtype == DType::BF16) return matmul_bf16(x.dtype == DType::BF16 ? x : to_bf16(x), w, y, n, k, m);
    // Row-major y[n, m] = x[n, k] w[m, k]^T is column-major y^T[m, n] = w^T... : op(A) = W^T as stored (k x m).
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, (int)m, (int)n, (int)k, &one, w.data<float>(), (int)k,
                             x.data<float>(), (int)k, &zero, y.data<float>(), (int)m),
                 "sgemm");
  }
  // Q/K/V and gate/up: x rounded to bf16 once for all the products that share it.
  void matmul_nt_many(const Tensor& x, const std::vector<const Tensor*>& ws, const std::vector<Tensor*>& ys,
                      Batching batching = Batching::Shared) override {
    const bool all_bf16 = std::all_of(ws.begin(), ws.end(), [](const Tensor* w) { return w->dtype == DType::BF16; });
    if (!all_bf16 || ws.size() < 2) return Backend::matmul_nt_many(x, ws, ys, batching);
    bf16_products(x, ws, {}, ys);
  }
  // The biases in cuBLASLt's epilogue (f32 products): acc + bias rounded once, as add_bias after the product.
  void matmul_nt_many_bias(const Tensor& x, const std::vector<const Tensor*>& ws,
                           const std::vector<const Tensor*>& biases, const std::vector<Tensor*>& ys,
                           Batching batching = Batching::Shared) override {
    const bool fused = std::all_of(ws.begin(), ws.end(), [](const Tensor* w) { return w->dtype == DType::BF16; }) &&
                       std::all_of(ys.begin(), ys.end(), [](const Tensor* y) { return y->dtype == DType::F32; }) &&
                       std::all_of(biases.begin(), biases.end(), [](const Tensor* b) {  // the epilogue reads 16 bytes
                         return b == nullptr || alignment_of(b->data<char>()) >= 16;
                       });
    if (!fused || biases.size() != ws.size()) return Backend::matmul_nt_many_bias(x, ws, biases, ys, batching);
    bf16_products(x, ws, biases, ys);
  }
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override {
    check_f32(x, "rms_norm x");
    check_f32_or_bf16(y, "rms_norm y");
    const int64_t d = x.row_elems();
    KVF_CHECK(weight.numel() == d && y.numel() == x.numel(), "rms_norm: weight ", weight.numel(), ", rows of ", d);
    cuda::rms_norm(x.data<float>(), weight.data<float>(), eps, x.dim(0), d, y.data<char>(), y.dtype == DType::BF16,
                   s());
    launched("rms_norm");
  }
  void add_inplace(Tensor& y, const Tensor& x) override {
    KVF_CHECK(x.numel() == y.numel(), "add_inplace: ", shape_str(x.shape), " and ", shape_str(y.shape));
    cuda::add_inplace(y.data<float>(), x.data<float>(), y.numel(), s());
    launched("add_inplace");
  }
  void add_bias(Tensor& y, const Tensor& bias) override {
    KVF_CHECK(bias.numel() == y.row_elems(), "add_bias: bias of ", bias.numel(), " for rows of ", y.row_elems());
    cuda::add_bias(y.data<float>(), bias.data<float>(), y.dim(0), y.row_elems(), s());
    launched("add_bias");
  }
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
    KVF_CHECK(gate.numel() == up.numel() && gate.numel() == out.numel(), "swiglu: shapes differ");
    check_f32_or_bf16(gate, "swiglu gate");
    check_on_device(up, gate.dtype, "swiglu up");
    check_f32_or_bf16(out, "swiglu out");
    cuda::swiglu(gate.data<char>(), up.data<char>(), gate.dtype == DType::BF16, out.data<char>(),
                 out.dtype == DType::BF16, gate.numel(), s());
    launched("swiglu");
  }
  void embedding(const Tensor& table, const Tensor& ids, Tensor& out) override {
    KVF_CHECK(ids.dtype == DType::I32, "embedding: ids must be i32");
    check_f32(out, "embedding out");
    const int64_t n = ids.numel(), d = table.row_elems();
    KVF_CHECK(out.dim(0) == n && out.row_elems() == d, "embedding: out ", shape_str(out.shape));
    if (table.dtype == DType::BF16) {
      cuda::gather_bf16_rows_to_f32(table.data<char>(), table.dim(0), ids.data<int32_t>(), n, d, out.data<float>(),
                                    error_word(), s());
    } else {
      check_f32(table, "embedding table");
      cuda::gather_rows(table.data<char>(), table.dim(0), ids.data<int32_t>(), n, d * (int64_t)sizeof(float),
                        out.data<char>(), cuda::kBadTokenId, error_word(), s());
    }
    launched("embedding");
  }
  void gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) override {
    KVF_CHECK(rows.dtype == DType::I32 && src.dtype == dst.dtype, "gather_rows: bad dtypes");
    const int64_t n = rows.numel();
    const int64_t row_bytes = src.row_elems() * (int64_t)dtype_size(src.dtype);
    KVF_CHECK(dst.dim(0) == n && dst.row_elems() * (int64_t)dtype_size(dst.dtype) == row_bytes, "gather_rows: dst ",
              shape_str(dst.shape), " for ", n, " rows of ", shape_str(src.shape));
    cuda::gather_rows(src.data<char>(), src.dim(0), rows.data<int32_t>(), n, row_bytes, dst.data<char>(),
                      cuda::kBadGatherRow, error_word(), s());
    launched("gather_rows");
  }
  // Every gather in one launch: their descriptors uploaded, then the f32 staging kernel (a probe layer's view of
  // tens of chunks, and the portable attention_blocks of decoding steps, stage every layer).
  void gather_many(const std::vector<RowGather>& gathers, Tensor& k_dst, Tensor& v_dst, Tensor* pos_dst) override {
    check_f32(k_dst, "gather_many k_dst");
    check_f32(v_dst, "gather_many v_dst");
    KVF_CHECK(k_dst.shape == v_dst.shape, "gather_many: K ", shape_str(k_dst.shape), " and V ",
              shape_str(v_dst.shape));
    if (pos_dst != nullptr) {
      check_on_device(*pos_dst, DType::I32, "gather_many positions");
      KVF_CHECK(pos_dst->numel() == k_dst.dim(0), "gather_many: ", pos_dst->numel(), " positions for ",
                k_dst.dim(0), " rows");
    }
    const int64_t row = k_dst.row_elems();
    const std::vector<cuda::StagedBlock> staged = staged_blocks(gathers, k_dst.dim(0), row, pos_dst != nullptr);
    if (staged.empty()) return;
    const int64_t end = staged.back().first + staged.back().count;
    const Tensor descriptors = upload_descriptors(staged);
    cuda::stage_blocks_f32(reinterpret_cast<const cuda::StagedBlock*>(descriptors.data<char>()),
                           (int64_t)staged.size(), end, row, k_dst.data<float>(), v_dst.data<float>(),
                           pos_dst != nullptr ? pos_dst->data<int32_t>() : nullptr, error_word(), s());
    launched("gather_many");
  }
  void rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) override {
    KVF_CHECK(x.shape.size() == 3 && pos.numel() == x.dim(0), "rope: x ", shape_str(x.shape), " with ", pos.numel(),
              " positions");
    rope_from(x, x, pos, spec, inverse);
  }
  void rope_into(const Tensor& src, Tensor& dst, const Tensor& pos, const RopeSpec& spec) override {
    check_f32(src, "rope source");
    KVF_CHECK(src.shape == dst.shape && src.shape.size() == 3 && pos.numel() > 0 && src.dim(0) % pos.numel() == 0,
              "rope_into: ", shape_str(src.shape), " into ", shape_str(dst.shape), " with ", pos.numel(),
              " positions");
    rope_from(src, dst, pos, spec, false);
  }
  void attention(AttentionArgs& a) override {
    const AttentionDims dims = attention_dims(a);
    const cuda::AttentionShape sh = shape_of(dims, a.scale);
    Tensor row_max, row_sum;
    if (dims.probing) {
      row_max = empty(DType::F32, {sh.n, sh.n_heads});
      row_sum = empty(DType::F32, {sh.n, sh.n_heads});
    }
    float* max_ptr = dims.probing ? row_max.data<float>() : nullptr;
    float* sum_ptr = dims.probing ? row_sum.data<float>() : nullptr;
    if (use_flash(a.bf16_inputs, sh)) {
      Tensor k = to_bf16(a.k), v = to_bf16(a.v);
      flash(sh, a.q, a.q_pos, k, v, a.k_pos, a.out, max_ptr, sum_ptr);
    } else {
      attention_f32(sh, a.q, a.q_pos, a.k, a.v, a.k_pos, a.out, max_ptr, sum_ptr);
    }
    if (dims.probing) {
      cuda::probe_colsums(sh, a.q.data<float>(), a.q_pos.data<int32_t>(), a.k.data<float>(), a.k_pos.data<int32_t>(),
                          a.probe_rows.data<int32_t>(), a.probe_rows.numel(), max_ptr, sum_ptr,
                          a.probe_colsum.data<float>(), error_word(), s());
      launched("probe column sums");
    }
  }
  // The fast mode's prefill reads the view's rows (the survivors of the supersede rule, by their row lists) and
  // the computed tokens straight into one bf16 K/V, then the tensor-core kernel; few rows take the portable path.
  void attention_blocks(const BlockAttentionArgs& a) override { attention_blocks_many({a}); }
  // Sequences the tensor-core kernel takes go through it together: their blocks staged into one bf16 K/V in one
  // launch, then one attention launch over all of them when together they fill the GPU (a precompute batch's
  // chunks), else one per sequence, each split over its keys as it needs. Few rows take the portable path.
  void attention_blocks_many(const std::vector<BlockAttentionArgs>& seqs) override {
    std::vector<const BlockAttentionArgs*> tensor_core;
    std::vector<BlockAttentionDims> dims;
    for (const BlockAttentionArgs& a : seqs) {
      const BlockAttentionDims d = block_attention_dims(a);
      if (!use_flash(a.bf16_inputs, shape_of(d, a.scale))) {
        Backend::attention_blocks(a);
        continue;
      }
      KVF_CHECK(dims.empty() || (d.n_heads == dims[0].n_heads && d.n_kv_heads == dims[0].n_kv_heads &&
                                 d.head_dim == dims[0].head_dim && a.scale == tensor_core[0]->scale),
                "attention_blocks_many: sequence heads ", d.n_heads, "/", d.n_kv_heads, "x", d.head_dim,
                " differ from the first's");
      tensor_core.push_back(&a);
      dims.push_back(d);
    }
    if (tensor_core.empty()) return;
    int64_t keys = 0;
    for (const BlockAttentionDims& d : dims) keys += d.m;
    const BlockAttentionDims& d0 = dims[0];
    Tensor k = empty(DType::BF16, {keys, d0.n_kv_heads, d0.head_dim}), v = empty(DType::BF16, k.shape);
    Tensor k_pos = empty(DType::I32, {keys});
    stage_blocks(tensor_core, keys, d0.n_kv_heads * d0.head_dim, k, v, k_pos);
    std::vector<cuda::FlashSequence> flash_seqs;
    int64_t at = 0, row_blocks = 0;
    for (size_t i = 0; i < tensor_core.size(); ++i) {
      const BlockAttentionArgs& a = *tensor_core[i];
      flash_seqs.push_back(sequence(a.q, a.q_pos, a.out, at, dims[i].m));
      at += dims[i].m;
      row_blocks += cuda::flash_attention_blocks(shape_of(dims[i], a.scale));
    }
    cuda::AttentionShape heads = shape_of(d0, tensor_core[0]->scale);
    if (flash_seqs.size() > 1 && row_blocks >= 2 * (int64_t)multiprocessors_)
      return flash_sequences(heads, flash_seqs, k, v, k_pos, 1, nullptr);
    for (size_t i = 0; i < flash_seqs.size(); ++i) {
      const int64_t first = flash_seqs[i].k_first, m = dims[i].m;
      const cuda::AttentionShape sh = shape_of(dims[i], tensor_core[i]->scale);
      flash(sh, tensor_core[i]->q, tensor_core[i]->q_pos, k.rows(first, m), v.rows(first, m), k_pos.rows(first, m),
            tensor_core[i]->out, nullptr, nullptr);
    }
  }

 private:
  // Every block of these sequences, in order, into one bf16 K/V of `keys` rows and their positions, in one launch
  // (a view holds a block per chunk: a launch per block and layer would leave the GPU waiting on the host).
  void stage_blocks(const std::vector<const BlockAttentionArgs*>& seqs, int64_t keys, int64_t row, Tensor& k,
                    Tensor& v, Tensor& k_pos) {
    std::vector<RowGather> gathers;
    int64_t at = 0;
    for (const BlockAttentionArgs* a : seqs)
      for (const KeyBlock& b : a->blocks) {
        const int64_t count = b.pos.numel();
        gathers.push_back({b.k, b.v, b.rows, b.pos, at, count});
        at += count;
      }
    const std::vector<cuda::StagedBlock> staged = staged_blocks(gathers, keys, row, true);
    const Tensor descriptors = upload_descriptors(staged);
    cuda::stage_blocks_bf16(reinterpret_cast<const cuda::StagedBlock*>(descriptors.data<char>()),
                            (int64_t)staged.size(), keys, row, k.data<char>(), v.data<char>(), k_pos.data<int32_t>(),
                            error_word(), s());
    launched("staging attention blocks");
  }
  // The staging kernel's descriptors of these gathers into `dst_rows` rows of `row` values, checked and ordered by
  // destination row (empty gathers left out); their positions only `with_pos`.
  static std::vector<cuda::StagedBlock> staged_blocks(const std::vector<RowGather>& gathers, int64_t dst_rows,
                                                      int64_t row, bool with_pos) {
    std::vector<cuda::StagedBlock> staged;
    for (const RowGather& g : gathers) {
      if (g.count == 0) continue;
      check_f32(g.k, "staged source k");
      check_f32(g.v, "staged source v");
      KVF_CHECK(g.k.shape == g.v.shape && g.k.row_elems() == row, "staging: source ", shape_str(g.k.shape),
                " into rows of ", row);
      KVF_CHECK(g.first >= 0 && g.count > 0 && g.first + g.count <= dst_rows, "staging: rows [", g.first, ", ",
                g.first + g.count, ") outside the destination's ", dst_rows);
      if (g.rows.defined()) check_on_device(g.rows, DType::I32, "staged rows");
      KVF_CHECK(g.rows.defined() ? g.rows.numel() == g.count : g.count <= g.k.dim(0), "staging: ", g.count,
                " rows from a source of ", g.k.dim(0), g.rows.defined() ? " by a list of " : "",
                g.rows.defined() ? std::to_string(g.rows.numel()) : "");
      if (with_pos) {
        check_on_device(g.pos, DType::I32, "staged positions");
        KVF_CHECK(g.pos.numel() == g.count, "staging: ", g.pos.numel(), " positions for ", g.count, " rows");
      }
      staged.push_back({g.k.data<float>(), g.v.data<float>(), g.rows.defined() ? g.rows.data<int32_t>() : nullptr,
                        with_pos ? g.pos.data<int32_t>() : nullptr, g.first, g.count, g.k.dim(0)});
    }
    std::sort(staged.begin(), staged.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 1; i < staged.size(); ++i)
      KVF_CHECK(staged[i].first >= staged[i - 1].first + staged[i - 1].count, "staging: rows from ",
                staged[i].first, " are written by two gathers");
    return staged;
  }
  // Staging descriptors in device memory, freed in stream order once the kernel that reads them has run.
  Tensor upload_descriptors(const std::vector<cuda::StagedBlock>& staged) {
    Tensor descriptors = empty(DType::I8, {(int64_t)(staged.size() * sizeof(cuda::StagedBlock))});
    copy_from_host(descriptors, staged.data(), staged.size() * sizeof(cuda::StagedBlock));
    return descriptors;
  }
  // x = src rotated (src may be x), row r at pos[r % pos.numel()].
  void rope_from(const Tensor& src, Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) {
    check_f32(x, "rope x");
    KVF_CHECK(spec.inv_freq && (int64_t)spec.inv_freq->size() == spec.rotary_dim / 2 && spec.rotary_dim <= x.dim(2),
              "rope: rotary_dim ", spec.rotary_dim, " does not fit head_dim ", x.dim(2));
    cuda::rope(src.data<float>(), x.data<float>(), pos.data<int32_t>(), pos.numel(), x.dim(0), x.dim(1), x.dim(2),
               spec.rotary_dim, frequencies(spec).data<float>(), spec.attn_factor, spec.pairing == RopePairing::Adjacent, inverse,
               error_word(), s());
    launched("rope");
  }
  static constexpr int64_t kWorkspaceBytes = 32 << 20;  // cuBLASLt's

  // KVF_GEMM_TUNE=1: a product of at most kTuneRows rows (a selection pass's question rows, decoding) times each
  // of cuBLASLt's first kTuneCandidates algorithms on its first call and keeps the fastest. The heuristic's first
  // choice can leave most multiprocessors idle on such thin products, which read every weight once and should run
  // at memory bandwidth. Off by default: a choice made by timing can differ between processes, and with it the
  // order the sums run in.
  static constexpr int64_t kTuneRows = 128;
  static constexpr int kTuneCandidates = 8;
  static bool gemm_tuning() {
    const char* on = std::getenv("KVF_GEMM_TUNE");
    return on != nullptr && std::strcmp(on, "1") == 0;
  }

  // A cuBLASLt matmul for one (n, k, m) and output alignment: descriptors and the heuristic's algorithm (with
  // tuning, the others to time on the first call).
  struct LtPlan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::vector<cublasLtMatmulAlgo_t> untimed;  // KVF_GEMM_TUNE: candidates, emptied once timed
    void destroy() {
      cublasLtMatrixLayoutDestroy(a);
      cublasLtMatrixLayoutDestroy(b);
      cublasLtMatrixLayoutDestroy(c);
      cublasLtMatmulDescDestroy(op);
    }
  };

  cudaStream_t s() const { return stream_->s; }
  cuda::IndexError* error_word() { return reinterpret_cast<cuda::IndexError*>(errors_.data<char>()); }
  void launched(const char* what) { check_cuda(cudaGetLastError(), what); }

  [[noreturn]] static void throw_index_error(const cuda::IndexError& e) {
    switch (e.code) {
      case cuda::kBadTokenId:
        fail("token id ", e.value, " at index ", e.index, " is outside the vocabulary of ", e.bound);
      case cuda::kBadGatherRow:
        fail("gather_rows: row ", e.value, " at index ", e.index, " outside [0, ", e.bound, ")");
      case cuda::kNegativePosition:
        fail("rope: negative position ", e.value, " at row ", e.index);
      case cuda::kBadProbeRow:
        fail("attention: probe row ", e.value, " (probe ", e.index, ") outside [0, ", e.bound, ")");
      default:
        fail("cuda backend: unknown device error code ", e.code);
    }
  }

  // ys[i] = x · ws[i]^T (+ biases[i], where given) with bf16 weights, x rounded to bf16 once.
  void bf16_products(const Tensor& x, const std::vector<const Tensor*>& ws, const std::vector<const Tensor*>& biases,
                     const std::vector<Tensor*>& ys) {
    check_matmul_input(x, *ws[0]);
    const Tensor xb = x.dtype == DType::BF16 ? x : to_bf16(x);
    for (size_t i = 0; i < ws.size(); ++i) {
      check_matmul_output(*ys[i], *ws[i]);
      check_on_device(*ws[i], DType::BF16, "matmul w");
      const auto [n, k, m] = matmul_dims(x, *ws[i], *ys[i]);
      const Tensor* bias = biases.empty() ? nullptr : biases[i];
      if (bias != nullptr) {
        check_on_device(*bias, DType::F32, "matmul bias");
        KVF_CHECK(bias->numel() == m, "matmul bias: ", bias->numel(), " values for ", m, " columns");
      }
      if (n && m) matmul_bf16(xb, *ws[i], *ys[i], n, k, m, bias);
    }
  }
  // Row-major y[n, m] = xb[n, k] · w[m, k]^T (+ bias[m] per row), both bf16, f32 accumulate, f32 y.
  // y f32, or bf16 (the f32 accumulators rounded; no bias).
  void matmul_bf16(const Tensor& xb, const Tensor& w, Tensor& y, int64_t n, int64_t k, int64_t m,
                   const Tensor* bias = nullptr) {
    const bool y_bf16 = y.dtype == DType::BF16;
    const auto key = std::make_tuple(n, k, m, alignment_of(y.data<char>()), y_bf16, bias != nullptr);
    auto it = lt_plans_.find(key);
    if (it == lt_plans_.end())
      it = lt_plans_.emplace(key, make_plan(n, k, m, std::get<3>(key), y_bf16, bias != nullptr)).first;
    LtPlan& p = it->second;
    if (bias != nullptr) {  // the pointer is the call's; the plan's descriptor carries it to cublasLtMatmul
      const void* values = bias->data<float>();
      check_cublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &values, sizeof values),
                   "bias pointer");
    }
    if (!p.untimed.empty()) pick_fastest(p, xb, w, y, n, k, m);
    check_cublas(run_lt(p, p.algo, xb, w, y), "cublasLtMatmul");
  }
  cublasStatus_t run_lt(const LtPlan& p, const cublasLtMatmulAlgo_t& algo, const Tensor& xb, const Tensor& w,
                        Tensor& y) {
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(lt_, p.op, &one, w.data<char>(), p.a, xb.data<char>(), p.b, &zero, y.data<char>(), p.c,
                          y.data<char>(), p.c, &algo, workspace_.data<char>(), kWorkspaceBytes, s());
  }
  // KVF_GEMM_TUNE: each candidate once to warm up, then its best of three (CUDA events on the stream); the fastest
  // becomes the plan's algorithm, said on stderr beside the heuristic's first choice.
  void pick_fastest(LtPlan& p, const Tensor& xb, const Tensor& w, Tensor& y, int64_t n, int64_t k, int64_t m) {
    cudaEvent_t from, to;
    check_cuda(cudaEventCreate(&from), "tuning event");
    check_cuda(cudaEventCreate(&to), "tuning event");
    std::vector<float> best_ms;
    for (const cublasLtMatmulAlgo_t& algo : p.untimed) {
      float best = -1;
      for (int rep = 0; rep < 4; ++rep) {
        check_cuda(cudaEventRecord(from, s()), "tuning event");
        const cublasStatus_t status = run_lt(p, algo, xb, w, y);
        check_cuda(cudaEventRecord(to, s()), "tuning event");
        check_cuda(cudaEventSynchronize(to), "tuning event");
        if (status != CUBLAS_STATUS_SUCCESS) break;  // a candidate this call cannot run is not chosen
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, from, to), "tuning event");
        if (rep > 0) best = best < 0 ? ms : std::min(best, ms);
      }
      best_ms.push_back(best);
    }
    cudaEventDestroy(from);
    cudaEventDestroy(to);
    size_t pick = 0;
    for (size_t i = 0; i < best_ms.size(); ++i)
      if (best_ms[i] >= 0 && (best_ms[pick] < 0 || best_ms[i] < best_ms[pick])) pick = i;
    KVF_CHECK(best_ms[pick] >= 0, "cublasLt: none of ", best_ms.size(), " algorithms ran for ", n, "x", k, " by ",
              m, "x", k);
    p.algo = p.untimed[pick];
    std::fprintf(stderr, "cuda: gemm %lldx%lld by %lldx%lld: algorithm %zu of %zu, %.4f ms (the heuristic's first: "
                 "%.4f ms)\n", (long long)n, (long long)k, (long long)m, (long long)k, pick + 1, best_ms.size(),
                 best_ms[pick], best_ms[0]);
    p.untimed.clear();
  }
  // Column-major: D^T[m, n] = op(A)[m, k] · B[k, n], A = W as stored (k x m, transposed), B = x^T (k x n).
  // With a bias: one f32 value per row of D^T (a column of y), added in the epilogue.
  LtPlan make_plan(int64_t n, int64_t k, int64_t m, uint32_t y_alignment, bool y_bf16, bool bias) {
    LtPlan p;
    check_cublas(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
    const cublasOperation_t trans = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "transa");
    check_cublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain), "transb");
    if (bias) {
      const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      check_cublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                   "epilogue");
      const cudaDataType_t bias_type = CUDA_R_32F;
      check_cublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                  sizeof bias_type),
                   "bias type");
    }
    check_cublas(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k), "layout a");
    check_cublas(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k), "layout b");
    check_cublas(cublasLtMatrixLayoutCreate(&p.c, y_bf16 ? CUDA_R_16BF : CUDA_R_32F, (uint64_t)m, (uint64_t)n, m),
                 "layout c");
    cublasLtMatmulPreference_t pref;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "preference");
    const uint64_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &y_alignment,
                                         sizeof y_alignment);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &y_alignment,
                                         sizeof y_alignment);
    const int wanted = n <= kTuneRows && gemm_tuning() ? kTuneCandidates : 1;
    std::vector<cublasLtMatmulHeuristicResult_t> results((size_t)wanted);
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.a, p.b, p.c, p.c, pref, wanted, results.data(), &found);
    cublasLtMatmulPreferenceDestroy(pref);
    KVF_CHECK(status == CUBLAS_STATUS_SUCCESS && found > 0, "cublasLt: no bf16 algorithm for ", n, "x", k, " by ", m,
              "x", k, " (status ", (int)status, ")");
    p.algo = results[0].algo;
    if (found > 1)
      for (int i = 0; i < found; ++i) p.untimed.push_back(results[(size_t)i].algo);
    return p;
  }

  // x (f32) as a new bf16 tensor.
  Tensor to_bf16(const Tensor& x) {
    check_f32(x, "bf16 conversion source");
    Tensor out = empty(DType::BF16, x.shape);
    cuda::rows_to_bf16(x.data<float>(), x.dim(0), x.row_elems(), out.data<char>(), s());
    launched("bf16 conversion");
    return out;
  }

  template <typename Dims>  // AttentionDims or BlockAttentionDims
  static cuda::AttentionShape shape_of(const Dims& d, float scale) {
    cuda::AttentionShape sh;
    sh.n = d.n, sh.m = d.m, sh.n_heads = d.n_heads, sh.n_kv_heads = d.n_kv_heads, sh.head_dim = d.head_dim;
    sh.scale = scale;
    return sh;
  }
  static bool use_flash(bool bf16_inputs, const cuda::AttentionShape& sh) {
    return bf16_inputs && sh.n >= kFlashMinRows && cuda::flash_attention_supports(sh.head_dim);
  }
  // The tensor-core kernel over one sequence: few rows over many keys split the keys over blocks.
  void flash(const cuda::AttentionShape& sh, const Tensor& q, const Tensor& q_pos, const Tensor& k, const Tensor& v,
             const Tensor& k_pos, const Tensor& out, float* row_max, float* row_sum) {
    const int64_t splits = cuda::flash_attention_splits(sh, multiprocessors_);
    Tensor scratch;
    if (splits > 1) scratch = empty(DType::F32, {splits * sh.n * sh.n_heads * (sh.head_dim + 2)});
    flash_sequences(sh, {sequence(q, q_pos, out, 0, sh.m, row_max, row_sum)}, k, v, k_pos, splits,
                    splits > 1 ? scratch.data<float>() : nullptr);
  }
  static cuda::FlashSequence sequence(const Tensor& q, const Tensor& q_pos, const Tensor& out, int64_t k_first,
                                      int64_t m, float* row_max = nullptr, float* row_sum = nullptr) {
    cuda::FlashSequence seq;
    seq.q = q.data<float>(), seq.q_pos = q_pos.data<int32_t>(), seq.out = out.data<float>();
    seq.row_max = row_max, seq.row_sum = row_sum;
    seq.n = q.dim(0), seq.k_first = k_first, seq.m = m;
    return seq;
  }
  void flash_sequences(const cuda::AttentionShape& heads, const std::vector<cuda::FlashSequence>& seqs,
                       const Tensor& k, const Tensor& v, const Tensor& k_pos, int64_t splits, float* scratch) {
    const int64_t n_seqs = (int64_t)seqs.size();
    Tensor work = empty(DType::I8, {cuda::flash_attention_work_bytes(seqs.data(), n_seqs)});
    cuda::flash_attention(heads, seqs.data(), n_seqs, k.data<char>(), v.data<char>(), k_pos.data<int32_t>(),
                          work.data<char>(), splits, scratch, s());
    launched("flash attention");
  }
  void attention_f32(const cuda::AttentionShape& sh, const Tensor& q, const Tensor& q_pos, const Tensor& k,
                     const Tensor& v, const Tensor& k_pos, const Tensor& out, float* row_max, float* row_sum) {
    KVF_CHECK(sh.head_dim <= 256, "attention: head_dim ", sh.head_dim, " above the supported 256");
    const int64_t splits = cuda::attention_splits(sh, multiprocessors_);
    Tensor scratch;
    if (splits > 1) scratch = empty(DType::F32, {splits * sh.n * sh.n_heads * (sh.head_dim + 2)});
    cuda::attention(sh, q.data<float>(), q_pos.data<int32_t>(), k.data<float>(), v.data<float>(),
                    k_pos.data<int32_t>(), out.data<float>(), splits, splits > 1 ? scratch.data<float>() : nullptr,
                    row_max, row_sum, s());
    launched("attention");
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

  static constexpr size_t kPinnedFrom = 1 << 20;  // uploads from this many bytes go through staging_

  std::shared_ptr<Stream> stream_, free_on_;
  PinnedStaging staging_;
  std::once_flag lane_made_;
  std::unique_ptr<CudaBackend> lane_;
  int multiprocessors_ = 0;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  Tensor workspace_, errors_;
  std::map<std::tuple<int64_t, int64_t, int64_t, uint32_t, bool, bool>, LtPlan>
      lt_plans_;  // n, k, m, y alignment, bf16 y, bias
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
