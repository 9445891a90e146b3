// A Backend decorator that times every op it forwards, to show where a forward pass spends its time. Two timings:
//   OpsWaited  wall-clock around each call, the backend synchronised before and after (so the GPU's ops are
//              waited for: a profiled run is slower, but each op's share is its own).
//   HostCalls  the time each call keeps the host (an asynchronous backend's launch cost), nothing waited for, and
//              each stage's wall time, synchronised only where stages change. A stage whose calls take about its
//              wall time is bound by launching ops, not by the device running them.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace kvf {

struct OpStats {
  double seconds = 0;
  int64_t calls = 0;
};

class ProfilingBackend final : public Backend {
 public:
  enum class Timing { OpsWaited, HostCalls };
  explicit ProfilingBackend(Backend& inner, Timing timing = Timing::OpsWaited) : inner_(inner), timing_(timing) {}
  const std::map<std::string, OpStats>& stats() const { return stats_; }
  // HostCalls: each stage's wall time (calls: how often it ran); the running stage counts once it is closed.
  const std::map<std::string, OpStats>& stage_walls() const { return stage_walls_; }
  void reset();
  // Ops from here on are recorded as "stage/op" (an empty stage: the op's name alone), so a caller can split
  // its stages' time, e.g. a fused prefill's selection from its sparse pass. HostCalls: closes the running stage.
  void set_stage(std::string stage);
  // HostCalls: waits for the running stage's work and adds its wall time to stage_walls() (no stage runs after).
  void close_stage();

  std::string name() const override { return inner_.name() + "+profile"; }
  Device device() const override { return inner_.device(); }
  bool accepts_weights(DType dtype, int64_t row_elems) const override {
    return inner_.accepts_weights(dtype, row_elems);
  }
  void synchronize() override { inner_.synchronize(); }
  // Loads are not the profiled query's ops, and run on another thread: untimed, on the inner backend's lane.
  Backend& loading_lane() override { return inner_.loading_lane(); }
  DType matmul_input_dtype(const Tensor& w) const override { return inner_.matmul_input_dtype(w); }
  Tensor empty(DType dtype, const Shape& shape) override;
  void copy_from_host(Tensor& dst, const void* src, size_t bytes) override;
  void copy_to_host(const Tensor& src, void* dst, size_t bytes) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void matmul_nt(const Tensor& x, const Tensor& w, Tensor& y, Batching batching = Batching::Shared) override;
  void matmul_nt_many(const Tensor& x, const std::vector<const Tensor*>& ws, const std::vector<Tensor*>& ys,
                      Batching batching = Batching::Shared) override;
  void matmul_nt_many_bias(const Tensor& x, const std::vector<const Tensor*>& ws,
                           const std::vector<const Tensor*>& biases, const std::vector<Tensor*>& ys,
                           Batching batching = Batching::Shared) override;
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override;
  void add_inplace(Tensor& y, const Tensor& x) override;
  void add_bias(Tensor& y, const Tensor& bias) override;
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void embedding(const Tensor& table, const Tensor& ids, Tensor& out) override;
  void gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) override;
  void gather_many(const std::vector<RowGather>& gathers, Tensor& k_dst, Tensor& v_dst, Tensor* pos_dst) override;
  void rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) override;
  void rope_into(const Tensor& src, Tensor& dst, const Tensor& pos, const RopeSpec& spec) override;
  void attention(AttentionArgs& args) override;
  void attention_blocks(const BlockAttentionArgs& args) override;
  void attention_blocks_many(const std::vector<BlockAttentionArgs>& seqs) override;

 private:
  template <typename F>
  auto timed(const char* op, F&& call);
  Backend& inner_;
  Timing timing_;
  std::map<std::string, OpStats> stats_, stage_walls_;
  std::string stage_;
  bool stage_open_ = false;  // HostCalls: stage_ started at stage_from_ and is not yet in stage_walls_
  std::chrono::steady_clock::time_point stage_from_;
};

}  // namespace kvf
