#include "backend/kv_segment.h"

#include <numeric>

namespace kvf {

void LowBitRows::decode(int layer, const int32_t* row_ids, int64_t n, float* k, float* v) const {
  KVF_CHECK(layer >= 0 && (size_t)layer < layer_map.size(), "low-bit rows: layer ", layer, " outside [0, ",
            layer_map.size(), ")");
  const int64_t w = layer_width();
  KVF_CHECK(decode_low_bit_rows(spec, bytes.data(), rows, width(), layer_map[(size_t)layer] * w, w, row_ids, n, k, v),
            "low-bit rows: a scale or minimum is not finite");
}

KvSegment KvSegment::slice(int64_t begin, int64_t count) const {
  KVF_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "KvSegment: rows [", begin, ", ", begin + count,
            ") outside [0, ", rows(), ")");
  KvSegment out;
  out.positions.assign(positions.begin() + begin, positions.begin() + begin + count);
  out.encoded = encoded;
  out.encoded_first = encoded_first + begin;
  for (size_t l = 0; l < k.size(); ++l) {
    out.k.push_back(k[l].rows(begin, count));
    out.v.push_back(v[l].rows(begin, count));
  }
  for (const Tensor& k_l : k_roped) out.k_roped.push_back(k_l.defined() ? k_l.rows(begin, count) : Tensor());
  return out;
}

void KvSegment::layer_to_host(int l, Backend& backend, std::vector<float>& k_out, std::vector<float>& v_out) const {
  KVF_CHECK(l >= 0 && l < layers(), "KvSegment: layer ", l, " outside [0, ", layers(), ")");
  if (encoded) {
    std::vector<int32_t> ids((size_t)rows());
    std::iota(ids.begin(), ids.end(), (int32_t)encoded_first);
    k_out.resize((size_t)(rows() * encoded->layer_width()));
    v_out.resize(k_out.size());
    encoded->decode(l, ids.data(), rows(), k_out.data(), v_out.data());
    return;
  }
  k_out.resize((size_t)k[(size_t)l].numel());
  v_out.resize((size_t)v[(size_t)l].numel());
  backend.copy_to_host(k[(size_t)l], k_out.data(), k_out.size() * sizeof(float));
  backend.copy_to_host(v[(size_t)l], v_out.data(), v_out.size() * sizeof(float));
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
  // One allocation for every layer's rows of each kind: a decoding step reads them all, and one large buffer is
  // what a backend can place on huge pages (cpu_backend.cpp).
  const auto per_layer = [&](std::vector<Tensor>& out) {
    const Tensor all = backend.empty(DType::F32, {n_layers * capacity, n_kv_heads, head_dim});
    for (int l = 0; l < n_layers; ++l) out.push_back(all.rows(l * capacity, capacity));
  };
  per_layer(k_);
  per_layer(v_);
  if (rope_) per_layer(k_roped_);
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
