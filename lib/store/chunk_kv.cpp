#include "store/chunk_kv.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"

namespace kvf {

HostKv segment_to_host(const KvSegment& seg, Backend& backend) {
  HostKv out;
  out.rows = seg.rows();
  out.positions = seg.positions;
  const int64_t layers = seg.layers();
  if (layers == 0) return out;
  const int64_t row = seg.encoded ? seg.encoded->layer_width() : seg.k[0].row_elems();  // kv_heads * head_dim
  out.layers = (int)layers;
  out.width = row;
  out.k.resize((size_t)(out.rows * layers * row));
  out.v.resize(out.k.size());
  std::vector<float> layer_k, layer_v;
  for (int64_t l = 0; l < layers; ++l) {
    seg.layer_to_host((int)l, backend, layer_k, layer_v);
    for (int64_t r = 0; r < out.rows; ++r) {
      std::copy_n(layer_k.data() + r * row, row, out.k.data() + (r * layers + l) * row);
      std::copy_n(layer_v.data() + r * row, row, out.v.data() + (r * layers + l) * row);
    }
  }
  return out;
}

namespace {

// Per model layer tensors from per stored layer ones, following the layout's layer map.
KvSegment segment_of_stored_layers(const std::vector<Tensor>& k_stored, const std::vector<Tensor>& v_stored,
                                   const KvShardLayout& layout, std::vector<int32_t> positions) {
  KvSegment seg;
  seg.positions = std::move(positions);
  for (int32_t src : layout.layer_map) {  // shared layers point at the same tensors
    seg.k.push_back(k_stored.at(src));
    seg.v.push_back(v_stored.at(src));
  }
  return seg;
}

}  // namespace

KvSegment host_to_segment(const HostKv& kv, const KvShardLayout& layout, Backend& backend,
                          std::vector<int32_t> positions) {
  KVF_CHECK((int64_t)positions.size() == kv.rows, "chunk KV: ", positions.size(), " positions for ", kv.rows,
            " rows");
  const int64_t row = (int64_t)layout.kv_heads * layout.head_dim, stored = layout.stored_layers;
  // Every stored layer's rows, layer after layer, in one K and one V tensor (one allocation; a rotation can then
  // cover every layer in one call); each layer is a view of its rows. The host's rows hold every stored layer
  // each: the host reorders them in place, a device receives them as they are in one upload and reorders them.
  const int64_t n = stored * kv.rows;
  Tensor k_all = backend.empty(DType::F32, {n, layout.kv_heads, layout.head_dim});
  Tensor v_all = backend.empty(DType::F32, k_all.shape);
  if (backend.device() == Device::Host) {
    for (int64_t s = 0; s < stored; ++s)
      for (int64_t r = 0; r < kv.rows; ++r) {
        std::copy_n(kv.k.data() + (r * stored + s) * row, row, k_all.data<float>() + (s * kv.rows + r) * row);
        std::copy_n(kv.v.data() + (r * stored + s) * row, row, v_all.data<float>() + (s * kv.rows + r) * row);
      }
  } else if (n > 0) {
    std::vector<int32_t> order((size_t)n);  // layer s, row r <- row r's layer s
    for (int64_t s = 0; s < stored; ++s)
      for (int64_t r = 0; r < kv.rows; ++r) order[(size_t)(s * kv.rows + r)] = (int32_t)(r * stored + s);
    Tensor rows = backend.empty(DType::I32, {n}), as_read = backend.empty(DType::F32, k_all.shape);
    backend.copy_from_host(rows, order.data(), order.size() * sizeof(int32_t));
    backend.copy_from_host(as_read, kv.k.data(), (size_t)(n * row) * sizeof(float));
    backend.gather_rows(as_read, rows, k_all);
    backend.copy_from_host(as_read, kv.v.data(), (size_t)(n * row) * sizeof(float));
    backend.gather_rows(as_read, rows, v_all);
  }
  std::vector<Tensor> k_stored, v_stored;
  for (int64_t s = 0; s < stored; ++s) {
    k_stored.push_back(k_all.rows(s * kv.rows, kv.rows));
    v_stored.push_back(v_all.rows(s * kv.rows, kv.rows));
  }
  return segment_of_stored_layers(k_stored, v_stored, layout, std::move(positions));
}

std::vector<int32_t> sources_of_layer_map(const std::vector<int32_t>& layer_map) {
  std::vector<int32_t> sources(layer_map.size());
  for (size_t l = 0; l < layer_map.size(); ++l)
    sources[l] = (int32_t)(std::find(layer_map.begin(), layer_map.end(), layer_map[l]) - layer_map.begin());
  return sources;
}

std::vector<int32_t> kv_sources_of_layout(const KvShardLayout& layout, const std::vector<int32_t>& model_sources) {
  if (model_sources.empty()) return sources_of_layer_map(layout.layer_map);
  KVF_CHECK(layout.layer_map == layer_map_of_sources(model_sources, (int)model_sources.size()), "KV mode '",
            layout.mode, "': its layer map does not keep the condensed-KV layers of this model (",
            layout.stored_layers, " stored layers); it was computed for another layout");
  return model_sources;
}

std::vector<int32_t> layer_map_of_sources(const std::vector<int32_t>& sources, int n_layers) {
  std::vector<int32_t> map((size_t)n_layers), stored_index((size_t)n_layers, -1);
  int32_t next = 0;
  for (int l = 0; l < n_layers; ++l)
    if (sources.empty() || sources[(size_t)l] == l) stored_index[(size_t)l] = next++;
  for (int l = 0; l < n_layers; ++l) map[(size_t)l] = stored_index[(size_t)(sources.empty() ? l : sources[(size_t)l])];
  return map;
}

KvSegment source_layers_of(const KvSegment& seg, const std::vector<int32_t>& sources) {
  if (sources.empty()) return seg;
  KvSegment out;
  out.positions = seg.positions;
  for (size_t l = 0; l < seg.k.size(); ++l)
    if (sources[l] == (int32_t)l) {
      out.k.push_back(seg.k[l]);
      out.v.push_back(seg.v[l]);
    }
  return out;
}

std::string kv_shard_name(const std::string& mode, size_t number) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%05zu.h5", number);
  return "kv/" + mode + buf;
}

std::string kv_mode_of_shard(const std::string& path) {
  // kv/<mode>-NNNNN.h5, the mode itself possibly holding dashes
  if (path.rfind("kv/", 0) != 0 || path.size() < 13 || path.compare(path.size() - 3, 3, ".h5") != 0) return "";
  const size_t dash = path.size() - 9;
  if (path[dash] != '-') return "";
  for (size_t i = dash + 1; i < path.size() - 3; ++i)
    if (path[i] < '0' || path[i] > '9') return "";
  return path.substr(3, dash - 3);
}

bool kv_mode_completed(const Manifest& m, const std::string& mode) {
  return m.find_stage("prefill-" + mode) || m.find_stage("compress-" + mode);
}

size_t next_kv_shard_number(const Manifest& m, const std::string& mode) {
  size_t next = 0;
  for (const CommittedFile& f : m.files)
    if (kv_mode_of_shard(f.path) == mode)  // kv/<mode>-NNNNN.h5: the digits before ".h5"
      next = std::max(next, (size_t)std::stoull(f.path.substr(f.path.size() - 8, 5)) + 1);
  return next;
}

KvModeReader::KvModeReader(const std::string& store_dir, const Manifest& m, const std::string& mode,
                           uint64_t fingerprint) {
  for (const CommittedFile& f : m.files) {
    if (kv_mode_of_shard(f.path) != mode) continue;
    shards_.push_back(std::make_unique<KvShardReader>(
        KvShardReader::open(store_file_path(store_dir, f.path), fingerprint)));
    const auto& index = shards_.back()->index();
    for (size_t e = 0; e < index.size(); ++e) where_[index[e].chunk_id] = {shards_.size() - 1, e};
  }
}

std::vector<uint64_t> KvModeReader::ids() const {
  std::vector<uint64_t> out;
  for (const auto& [id, where] : where_) out.push_back(id);
  return out;
}

std::pair<const KvShardReader*, size_t> KvModeReader::locate(uint64_t chunk_id) const {
  const auto it = where_.find(chunk_id);
  KVF_CHECK(it != where_.end(), "no stored KV for chunk ", chunk_id);
  return {shards_[it->second.first].get(), it->second.second};
}

HostKv KvModeReader::read(uint64_t chunk_id) const {
  RawKvChunk& raw = thread_raw_chunk();
  read_raw(chunk_id, raw);
  return decode(raw);
}

KvSegment KvModeReader::read_encoded(uint64_t chunk_id) const {
  RawKvChunk raw;  // its bytes end up in the segment
  read_raw(chunk_id, raw);
  return encoded(std::move(raw));
}

void KvModeReader::read_raw(uint64_t chunk_id, RawKvChunk& raw) const {
  const auto [shard, entry] = locate(chunk_id);
  shard->read_raw(entry, raw);
}

HostKv KvModeReader::decode(const RawKvChunk& raw) const {
  const KvShardReader& shard = *locate(raw.chunk_id).first;
  HostKv kv;
  // Checked on every load: a flipped byte or a NaN must be an error naming the chunk and shard, not an answer.
  shard.decode_chunk(raw, kv.k, kv.v, true);
  kv.positions = raw.positions;
  kv.rows = (int64_t)kv.positions.size();
  kv.layers = shard.layout().stored_layers;
  kv.width = (int64_t)shard.layout().kv_heads * shard.layout().head_dim;
  return kv;
}

KvSegment KvModeReader::decode_segment(const RawKvChunk& raw, Backend& backend) const {
  const KvShardReader& shard = *locate(raw.chunk_id).first;
  const KvShardLayout& l = shard.layout();
  if (backend.device() != Device::Host) {
    const HostKv host = decode(raw);
    return host_to_segment(host, l, backend, host.positions);
  }
  // On the host each stored layer is decoded straight into its tensor.
  const int64_t rows = (int64_t)raw.positions.size();
  std::vector<Tensor> k_stored, v_stored;
  KvRowsOut out;
  out.row_stride = (int64_t)l.kv_heads * l.head_dim;
  for (int s = 0; s < l.stored_layers; ++s) {
    k_stored.push_back(backend.empty(DType::F32, {rows, l.kv_heads, l.head_dim}));
    v_stored.push_back(backend.empty(DType::F32, {rows, l.kv_heads, l.head_dim}));
    out.k.push_back(k_stored.back().data<float>());
    out.v.push_back(v_stored.back().data<float>());
  }
  shard.decode_chunk(raw, out, true);
  return segment_of_stored_layers(k_stored, v_stored, l, raw.positions);
}

KvSegment KvModeReader::encoded(RawKvChunk raw) const {
  const KvShardReader& shard = *locate(raw.chunk_id).first;
  shard.check_low_bit_encoded(raw);
  const KvShardLayout& l = shard.layout();
  auto rows = std::make_shared<LowBitRows>();
  KvSegment seg;
  rows->bytes = std::move(raw.bytes);
  seg.positions = std::move(raw.positions);
  rows->spec = l.low_bit_spec();
  rows->rows = seg.rows();
  rows->stored_layers = l.stored_layers;
  rows->kv_heads = l.kv_heads;
  rows->head_dim = l.head_dim;
  rows->layer_map = l.layer_map;
  seg.encoded = std::move(rows);
  return seg;
}

std::vector<double> KvModeReader::anchor_scores(uint64_t chunk_id) const {
  const auto [shard, entry] = locate(chunk_id);
  return shard->read_anchor_scores(entry);
}

uint64_t KvModeReader::context(uint64_t chunk_id) const {
  const auto [shard, entry] = locate(chunk_id);
  return shard->index()[entry].context;
}

const KvShardLayout& KvModeReader::layout() const {
  KVF_CHECK(!shards_.empty(), "no KV shards of this mode yet");
  return shards_.front()->layout();
}

}  // namespace kvf
