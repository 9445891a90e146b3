// CPU backend: f32 activations; matmuls over f32 weights by OpenBLAS sgemm (single-threaded calls), over compact
// weights (bf16, f16, ggml blocks) by the run-time chosen kernels of packed_matmul.h; everything split across cores
// with TBB, so one thread pool (TBB's, sized by tbb::global_control) does all the parallel work.
#pragma once
#include "backend/backend.h"

namespace kvf::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::Host; }
  bool accepts_weights(DType dtype, int64_t row_elems) const override;
  Tensor matmul_weight(DType dtype, const Shape& shape, const void* bytes) override;

  Tensor empty(DType dtype, const Shape& shape) override;
  void copy_from_host(Tensor& dst, const void* src, size_t bytes) override;
  void copy_to_host(const Tensor& src, void* dst, size_t bytes) override;
  void copy(const Tensor& src, Tensor& dst) override;

  void matmul_nt(const Tensor& x, const Tensor& w, Tensor& y, Batching batching = Batching::Shared) override;
  void matmul_nt_many(const Tensor& x, const std::vector<const Tensor*>& ws, const std::vector<Tensor*>& ys,
                      Batching batching = Batching::Shared) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override;
  void add_inplace(Tensor& y, const Tensor& x) override;
  void add_bias(Tensor& y, const Tensor& bias) override;
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void embedding(const Tensor& table, const Tensor& ids, Tensor& out) override;
  void gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) override;
  void rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) override;
  void attention(AttentionArgs& args) override;
  void attention_blocks(const BlockAttentionArgs& args) override;
};

}  // namespace kvf::cpu
