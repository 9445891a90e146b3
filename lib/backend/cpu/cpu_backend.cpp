#include "backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <sys/mman.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/interleaved_weights.h"
#include "backend/cpu/packed_matmul.h"
#include "backend/cpu/vec_math.h"
#include "backend/op_checks.h"

namespace kvf::cpu {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Host memory. Large tensors (weights, KV buffers) sit on 2 MiB boundaries with transparent huge pages asked for:
// a decoding step reads every stored key once, from buffers far apart, and with 4 KiB pages it spent much of its
// attention time walking page tables (SmolLM2, 16 sequences decoded together: bench/prefill_bench.cpp). Under
// AddressSanitizer every tensor comes from the allocator, whose bounds it checks.
class HostStorage final : public Storage {
 public:
  explicit HostStorage(size_t bytes) {
    bytes_ = bytes;
    if (bytes >= kHugePage && !kAddressSanitizer) {
      mapped_ = bytes + kHugePage;  // room to start on a huge-page boundary
      void* m = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      KVF_CHECK(m != MAP_FAILED, "out of host memory allocating ", bytes, " bytes");
      map_ = m;
      data_ = (void*)(((uintptr_t)m + kHugePage - 1) / kHugePage * kHugePage);
      ::madvise(data_, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice only: no huge pages is no error
      return;
    }
    // 64-byte alignment for AVX-512 loads; at least one cache line so empty tensors still get an address.
    const size_t rounded = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded ? rounded : 64);
    KVF_CHECK(data_ != nullptr, "out of host memory allocating ", bytes, " bytes");
  }
  ~HostStorage() override {
    if (map_) ::munmap(map_, mapped_);
    else std::free(data_);
  }
  Device device() const override { return Device::Host; }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  void* map_ = nullptr;
  size_t mapped_ = 0;
};

void check_f32(const Tensor& t, const char* what) {
  KVF_CHECK(t.defined() && t.dtype == DType::F32, "cpu backend: ", what, " must be a defined f32 tensor");
}

void check_same_numel(const Tensor& a, const Tensor& b, const char* op) {
  KVF_CHECK(a.numel() == b.numel(), "cpu backend ", op, ": shapes ", shape_str(a.shape), " and ",
            shape_str(b.shape), " differ");
}

// Splits [0, n) into one range per worker, each a multiple of `granule` long (the last one takes the rest).
template <typename F>
void parallel_ranges(int64_t n, int64_t granule, F&& body) {
  const int64_t granules = (n + granule - 1) / granule;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(tbb::this_task_arena::max_concurrency(), granules));
  tbb::parallel_for(int64_t{0}, parts, [&](int64_t i) {
    const int64_t begin = std::min(n, granules * i / parts * granule);
    const int64_t end = std::min(n, granules * (i + 1) / parts * granule);
    if (begin < end) body(begin, end);
  });
}

}  // namespace

CpuBackend::CpuBackend() {
  // All parallelism comes from TBB; OpenBLAS's own threads would fight it for the same cores.
  openblas_set_num_threads(1);
}

Tensor CpuBackend::empty(DType dtype, const Shape& shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  for (int64_t d : shape) KVF_CHECK(d >= 0, "cpu backend: negative dimension in shape ", shape_str(shape));
  t.storage = std::make_shared<HostStorage>(t.nbytes());
  return t;
}

void CpuBackend::copy_from_host(Tensor& dst, const void* src, size_t bytes) {
  KVF_CHECK(bytes == dst.nbytes(), "copy_from_host: ", bytes, " bytes into a tensor of ", dst.nbytes());
  if (bytes) std::memcpy(dst.data<char>(), src, bytes);
}

void CpuBackend::copy_to_host(const Tensor& src, void* dst, size_t bytes) {
  KVF_CHECK(bytes == src.nbytes(), "copy_to_host: ", bytes, " bytes from a tensor of ", src.nbytes());
  if (bytes) std::memcpy(dst, src.data<char>(), bytes);
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  KVF_CHECK(src.nbytes() == dst.nbytes(), "copy: ", src.nbytes(), " bytes into ", dst.nbytes());
  if (src.nbytes()) std::memcpy(dst.data<char>(), src.data<char>(), src.nbytes());
}

bool CpuBackend::accepts_weights(DType dtype, int64_t row_elems) const {
  if (dtype == DType::F32) return true;
  const bool compact = dtype == DType::BF16 || dtype == DType::F16 || dtype_is_block(dtype);
  return compact && row_elems % packed_matmul_k_step() == 0;
}

Tensor CpuBackend::matmul_weight(DType dtype, const Shape& shape, const void* bytes) {
  const DType interleaved = shape.size() == 2 ? interleaved_dtype_for(dtype, shape[0], shape[1]) : dtype;
  if (interleaved == dtype) return Backend::matmul_weight(dtype, shape, bytes);
  Tensor out = empty(interleaved, shape);
  interleave_rows(dtype, static_cast<const uint8_t*>(bytes), shape[0], shape[1], out.data<uint8_t>());
  return out;
}

void CpuBackend::matmul_nt(const Tensor& x, const Tensor& w, Tensor& y, Batching batching) {
  check_f32(x, "matmul x");
  check_f32(y, "matmul y");
  KVF_CHECK(w.defined() && accepts_weights(w.dtype, w.row_elems()), "cpu backend: matmul weights of type ",
            dtype_name(w.dtype), " with rows of ", w.row_elems());
  const auto [n, k, m] = matmul_dims(x, w, y);
  if (n == 0 || m == 0) return;
  if (w.dtype != DType::F32)
    return packed_matmul(x.data<float>(), n, k, {{&w, y.data<float>()}}, active_gemm_kernel(),
                         batching == Batching::Invariant);
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  // Each task owns a slice of the weight rows: it streams only its share of the weights. A few rows (decoding)
  // go through sgemv, which reads the weights in place; sgemm would first repack all of them. Batch-invariant rows
  // (a decoding step, Batching::Invariant) all go through sgemv, as each would in a call of its own. The slices
  // are as wide whatever the thread count: OpenBLAS's result for an output can depend on the width of the slice it
  // is computed in (its edge kernels sum in another order on some CPUs, e.g. AMD Zen 3), and a store must not
  // depend on how many threads made it.
  constexpr int64_t kGemvRows = 4, kSliceRows = 64;
  const int64_t slices = (m + kSliceRows - 1) / kSliceRows;
  // Structured bindings are captured by copy explicitly (C++17 lambdas cannot capture them; g++ allows it anyway).
  const bool rows_alone = batching == Batching::Invariant;
  tbb::parallel_for(int64_t{0}, slices, [&, n = n, k = k, m = m](int64_t slice) {
    const int64_t m0 = slice * kSliceRows, m1 = std::min(m, m0 + kSliceRows);
    if (n <= kGemvRows || rows_alone) {
      for (int64_t i = 0; i < n; ++i)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)(m1 - m0), (int)k, 1.0f, wp + m0 * k, (int)k, xp + i * k, 1,
                    0.0f, yp + i * m + m0, 1);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)(m1 - m0), (int)k, 1.0f, xp, (int)k,
                  wp + m0 * k, (int)k, 0.0f, yp + m0, (int)m);
    }
  });
}

void CpuBackend::matmul_nt_many(const Tensor& x, const std::vector<const Tensor*>& ws,
                                const std::vector<Tensor*>& ys, Batching batching) {
  KVF_CHECK(ws.size() == ys.size(), "matmul_nt_many: ", ws.size(), " weights for ", ys.size(), " outputs");
  bool compact = true;
  for (const Tensor* w : ws) compact = compact && w->defined() && w->dtype != DType::F32;
  if (!compact) return Backend::matmul_nt_many(x, ws, ys, batching);
  check_f32(x, "matmul x");
  std::vector<MatmulProduct> products;
  for (size_t i = 0; i < ws.size(); ++i) {
    check_f32(*ys[i], "matmul y");
    KVF_CHECK(accepts_weights(ws[i]->dtype, ws[i]->row_elems()), "cpu backend: matmul weights of type ",
              dtype_name(ws[i]->dtype), " with rows of ", ws[i]->row_elems());
    matmul_dims(x, *ws[i], *ys[i]);
    products.push_back({ws[i], ys[i]->data<float>()});
  }
  packed_matmul(x.data<float>(), x.dim(0), x.row_elems(), products, active_gemm_kernel(),
                batching == Batching::Invariant);
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  check_f32(x, "rms_norm x");
  const int64_t n = x.dim(0), d = x.row_elems();
  KVF_CHECK(weight.numel() == d, "rms_norm: weight of ", weight.numel(), " for rows of ", d);
  check_same_numel(x, y, "rms_norm");
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  float* yp = y.data<float>();
  tbb::parallel_for(int64_t{0}, n, [&](int64_t r) {
    const float* xr = xp + r * d;
    float* yr = yp + r * d;
    const float scale = (float)(1.0 / std::sqrt(sum_squares(xr, d) / (double)d + (double)eps));
    for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * scale * wp[i];
  });
}

void CpuBackend::add_inplace(Tensor& y, const Tensor& x) {
  check_same_numel(x, y, "add_inplace");
  float* yp = y.data<float>();
  const float* xp = x.data<float>();
  parallel_ranges(y.numel(), 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) yp[i] += xp[i];
  });
}

void CpuBackend::add_bias(Tensor& y, const Tensor& bias) {
  const int64_t d = y.row_elems();
  KVF_CHECK(bias.numel() == d, "add_bias: bias of ", bias.numel(), " for rows of ", d);
  const float* bp = bias.data<float>();
  tbb::parallel_for(int64_t{0}, y.dim(0), [&](int64_t r) {
    float* yr = y.data<float>() + r * d;
    for (int64_t i = 0; i < d; ++i) yr[i] += bp[i];
  });
}

void CpuBackend::swiglu(const Tensor& gate, const Tensor& up, Tensor& out) {
  check_same_numel(gate, up, "swiglu");
  check_same_numel(gate, out, "swiglu");
  parallel_ranges(gate.numel(), 4096, [&](int64_t b, int64_t e) {
    swiglu_row(gate.data<float>() + b, up.data<float>() + b, out.data<float>() + b, e - b);
  });
}

void CpuBackend::embedding(const Tensor& table, const Tensor& ids, Tensor& out) {
  KVF_CHECK(ids.dtype == DType::I32, "embedding: ids must be i32");
  KVF_CHECK(accepts_weights(table.dtype, table.row_elems()), "cpu backend: embedding table of type ",
            dtype_name(table.dtype));
  check_f32(out, "embedding out");
  const int64_t vocab = table.dim(0), d = table.row_elems(), n = ids.numel();
  KVF_CHECK(out.dim(0) == n && out.row_elems() == d, "embedding: out ", shape_str(out.shape));
  const int32_t* ip = ids.data<int32_t>();
  const size_t row_bytes = dtype_bytes(table.dtype, d);
  for (int64_t i = 0; i < n; ++i) {
    KVF_CHECK(ip[i] >= 0 && ip[i] < vocab, "token id ", ip[i], " at index ", i, " is outside the vocabulary of ",
              vocab);
    weight_values(table.dtype, table.data<uint8_t>() + ip[i] * row_bytes, 0, d, out.data<float>() + i * d);
  }
}

void CpuBackend::gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) {
  KVF_CHECK(rows.dtype == DType::I32 && src.dtype == dst.dtype, "gather_rows: bad dtypes");
  const int64_t n = rows.numel();
  const size_t row_bytes = (size_t)src.row_elems() * dtype_size(src.dtype);
  KVF_CHECK(dst.dim(0) == n && (size_t)dst.row_elems() * dtype_size(dst.dtype) == row_bytes,
            "gather_rows: dst ", shape_str(dst.shape), " for ", n, " rows of ", shape_str(src.shape));
  const int32_t* rp = rows.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    KVF_CHECK(rp[i] >= 0 && rp[i] < src.dim(0), "gather_rows: row ", rp[i], " outside [0, ", src.dim(0), ")");
    std::memcpy(dst.data<char>() + i * row_bytes, src.data<char>() + rp[i] * row_bytes, row_bytes);
  }
}

void CpuBackend::rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) {
  check_f32(x, "rope x");
  KVF_CHECK(x.shape.size() == 3 && pos.numel() == x.dim(0), "rope: x ", shape_str(x.shape), " with ",
            pos.numel(), " positions");
  const int64_t n = x.dim(0), heads = x.dim(1), hd = x.dim(2);
  const int64_t half = spec.rotary_dim / 2;
  KVF_CHECK(spec.inv_freq && (int64_t)spec.inv_freq->size() == half && spec.rotary_dim <= hd,
            "rope: rotary_dim ", spec.rotary_dim, " does not fit head_dim ", hd);
  const int32_t* pp = pos.data<int32_t>();
  const float* inv_freq = spec.inv_freq->data();
  KVF_CHECK(half <= 256, "rope: rotary_dim ", spec.rotary_dim, " above the supported 512");
  const bool adjacent = spec.pairing == RopePairing::Adjacent;
  const float* table = spec.cos_sin ? spec.cos_sin->data() : nullptr;
  // The table holds cos and sin times attn_factor; computed angles are multiplied here. The inverse rotation
  // divides by it: a table entry by attn_factor squared, a computed one by attn_factor.
  const float magnitude = spec.attn_factor;
  const bool scaled = magnitude != 1.0f;
  tbb::parallel_for(int64_t{0}, n, [&](int64_t r) {
    float cs[256], sn[256];
    const int32_t p = pp[r];
    KVF_CHECK(p >= 0, "rope: negative position ", p, " at row ", r);
    for (int64_t i = 0; i < half; ++i) {
      if (table && p < spec.table_positions) {
        cs[i] = table[(p * half + i) * 2];
        sn[i] = table[(p * half + i) * 2 + 1];
        if (scaled && inverse) {
          cs[i] /= magnitude * magnitude;
          sn[i] /= magnitude * magnitude;
        }
      } else {  // angles in double: positions reach 1e5 and a float product would lose the phase's low bits
        const double angle = (double)p * (double)inv_freq[i];
        cs[i] = (float)std::cos(angle);
        sn[i] = (float)std::sin(angle);
        if (scaled) {
          const float m = inverse ? 1.0f / magnitude : magnitude;
          cs[i] *= m;
          sn[i] *= m;
        }
      }
      if (inverse) sn[i] = -sn[i];
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x.data<float>() + (r * heads + h) * hd;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * cs[i] - x1 * sn[i];
        v[b] = x0 * sn[i] + x1 * cs[i];
      }
    }
  });
}

std::unique_ptr<Backend> make_cpu_backend_impl() { return std::make_unique<CpuBackend>(); }

}  // namespace kvf::cpu

namespace kvf {
std::unique_ptr<Backend> make_cpu_backend() { return cpu::make_cpu_backend_impl(); }
}  // namespace kvf
