#include "backend/profiling_backend.h"

#include <chrono>

#include "core/stopwatch.h"

namespace kvf {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// OpsWaited: each op is waited for (synchronize) so an asynchronous backend's op is charged its own device time.
// HostCalls: only the call itself is timed.
template <typename F>
auto ProfilingBackend::timed(const char* op, F&& call) {
  const bool wait = timing_ == Timing::OpsWaited;
  if (wait) inner_.synchronize();
  struct Record {  // records on every exit path, exceptions included
    Backend& inner;
    bool wait;
    OpStats& s;
    Clock::time_point t0 = Clock::now();
    ~Record() {
      if (wait) inner.synchronize();
      s.seconds += seconds_since(t0);
      ++s.calls;
    }
  } record{inner_, wait, stats_[stage_.empty() ? std::string(op) : stage_ + "/" + op]};
  return call();
}

void ProfilingBackend::reset() {
  stats_.clear();
  stage_walls_.clear();
  stage_from_ = Clock::now();
}

void ProfilingBackend::set_stage(std::string stage) {
  close_stage();
  stage_ = std::move(stage);
  if (timing_ != Timing::HostCalls) return;
  stage_open_ = true;
  stage_from_ = Clock::now();
}

void ProfilingBackend::close_stage() {
  if (!stage_open_) return;
  inner_.synchronize();
  OpStats& wall = stage_walls_[stage_];
  wall.seconds += seconds_since(stage_from_);
  ++wall.calls;
  stage_open_ = false;
}

Tensor ProfilingBackend::empty(DType dtype, const Shape& shape) {
  return timed("empty", [&] { return inner_.empty(dtype, shape); });
}
void ProfilingBackend::copy_from_host(Tensor& dst, const void* src, size_t bytes) {
  timed("copy_from_host", [&] { inner_.copy_from_host(dst, src, bytes); });
}
void ProfilingBackend::copy_to_host(const Tensor& src, void* dst, size_t bytes) {
  timed("copy_to_host", [&] { inner_.copy_to_host(src, dst, bytes); });
}
void ProfilingBackend::copy(const Tensor& src, Tensor& dst) {
  timed("copy", [&] { inner_.copy(src, dst); });
}
void ProfilingBackend::matmul_nt(const Tensor& x, const Tensor& w, Tensor& y, Batching batching) {
  timed("matmul_nt", [&] { inner_.matmul_nt(x, w, y, batching); });
}

void ProfilingBackend::matmul_nt_many(const Tensor& x, const std::vector<const Tensor*>& ws,
                                      const std::vector<Tensor*>& ys, Batching batching) {
  timed("matmul_nt", [&] { inner_.matmul_nt_many(x, ws, ys, batching); });
}
void ProfilingBackend::matmul_nt_many_bias(const Tensor& x, const std::vector<const Tensor*>& ws,
                                           const std::vector<const Tensor*>& biases, const std::vector<Tensor*>& ys,
                                           Batching batching) {
  timed("matmul_nt+bias", [&] { inner_.matmul_nt_many_bias(x, ws, biases, ys, batching); });
}
void ProfilingBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  timed("rms_norm", [&] { inner_.rms_norm(x, weight, eps, y); });
}
void ProfilingBackend::add_inplace(Tensor& y, const Tensor& x) {
  timed("add_inplace", [&] { inner_.add_inplace(y, x); });
}
void ProfilingBackend::add_bias(Tensor& y, const Tensor& bias) {
  timed("add_bias", [&] { inner_.add_bias(y, bias); });
}
void ProfilingBackend::swiglu(const Tensor& gate, const Tensor& up, Tensor& out) {
  timed("swiglu", [&] { inner_.swiglu(gate, up, out); });
}
void ProfilingBackend::embedding(const Tensor& table, const Tensor& ids, Tensor& out) {
  timed("embedding", [&] { inner_.embedding(table, ids, out); });
}
void ProfilingBackend::gather_rows(const Tensor& src, const Tensor& rows, Tensor& dst) {
  timed("gather_rows", [&] { inner_.gather_rows(src, rows, dst); });
}
void ProfilingBackend::gather_many(const std::vector<RowGather>& gathers, Tensor& k_dst, Tensor& v_dst,
                                   Tensor* pos_dst) {
  timed("gather_many", [&] { inner_.gather_many(gathers, k_dst, v_dst, pos_dst); });
}
void ProfilingBackend::rope_inplace(Tensor& x, const Tensor& pos, const RopeSpec& spec, bool inverse) {
  timed("rope", [&] { inner_.rope_inplace(x, pos, spec, inverse); });
}
void ProfilingBackend::rope_into(const Tensor& src, Tensor& dst, const Tensor& pos, const RopeSpec& spec) {
  timed("rope", [&] { inner_.rope_into(src, dst, pos, spec); });
}
void ProfilingBackend::attention(AttentionArgs& args) {
  timed("attention", [&] { inner_.attention(args); });
}
void ProfilingBackend::attention_blocks(const BlockAttentionArgs& args) {
  timed("attention_blocks", [&] { inner_.attention_blocks(args); });
}
void ProfilingBackend::attention_blocks_many(const std::vector<BlockAttentionArgs>& seqs) {
  timed("attention_blocks", [&] { inner_.attention_blocks_many(seqs); });
}

}  // namespace kvf
