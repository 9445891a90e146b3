#include "backend/kv_segment.h"

namespace kvf {

KvSegment KvSegment::slice(int64_t begin, int64_t count) const {
  KVF_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "KvSegment: rows [", begin, ", ", begin + count,
            ") outside [0, ", rows(), ")");
  KvSegment out;
  out.positions.assign(positions.begin() + begin, positions.begin() + begin + count);
  for (size_t l = 0; l < k.size(); ++l) {
    out.k.push_back(k[l].rows(begin, count));
    out.v.push_back(v[l].rows(begin, count));
  }
  for (const Tensor& k_l : k_roped) out.k_roped.push_back(k_l.defined() ? k_l.rows(begin, count) : Tensor());
  return out;
}

KvSegment placed_at(const KvSegment& seg, int32_t offset) {
  KvSegment out = seg;
  for (int32_t& p : out.positions) p += offset;
  if (offset != 0) out.k_roped.clear();
  return out;
}

KvBuffer::KvBuffer(Backend& backend, int n_layers, int n_kv_heads, int head_dim, int64_t capacity,
                   const RopeSpec* rope)
    : backend_(backend), capacity_(capacity), rope_(rope) {
  for (int l = 0; l < n_layers; ++l) {
    k_.push_back(backend.empty(DType::F32, {capacity, n_kv_heads, head_dim}));
    v_.push_back(backend.empty(DType::F32, {capacity, n_kv_heads, head_dim}));
    if (rope_) k_roped_.push_back(backend.empty(DType::F32, {capacity, n_kv_heads, head_dim}));
  }
}

void KvBuffer::append(const KvSegment& seg) {
  KVF_CHECK(seg.k.size() == k_.size() && seg.v.size() == v_.size(), "KvBuffer: segment has ", seg.k.size(),
            " layers, buffer ", k_.size());
  KVF_CHECK(rows() + seg.rows() <= capacity_, "KvBuffer: ", rows(), " + ", seg.rows(), " rows exceed capacity ",
            capacity_);
  Tensor pos;
  if (rope_ && seg.rows() > 0) {
    pos = backend_.empty(DType::I32, {seg.rows()});
    backend_.copy_from_host(pos, seg.positions.data(), seg.positions.size() * sizeof(int32_t));
  }
  for (size_t l = 0; l < k_.size(); ++l) {
    Tensor kd = k_[l].rows(rows(), seg.rows()), vd = v_[l].rows(rows(), seg.rows());
    backend_.copy(seg.k[l], kd);
    backend_.copy(seg.v[l], vd);
    if (rope_ && seg.rows() > 0) {
      Tensor kr = k_roped_[l].rows(rows(), seg.rows());
      backend_.copy(seg.k[l], kr);
      backend_.rope_inplace(kr, pos, *rope_);
    }
  }
  positions_.insert(positions_.end(), seg.positions.begin(), seg.positions.end());
}

KvSegment KvBuffer::view() const {
  KvSegment s;
  s.positions = positions_;
  for (size_t l = 0; l < k_.size(); ++l) {
    s.k.push_back(k_[l].rows(0, rows()));
    s.v.push_back(v_[l].rows(0, rows()));
    if (rope_) s.k_roped.push_back(k_roped_[l].rows(0, rows()));
  }
  return s;
}

}  // namespace kvf
