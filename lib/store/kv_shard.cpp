#include "store/kv_shard.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <utility>

#include "core/error.h"
#include "core/half.h"
#include "core/half_arrays.h"
#include "core/hex.h"
#include "core/int8_rows.h"
#include "io/durable_file.h"
#include "store/hdf5_file.h"
#include "store/manifest.h"
#include "store/store_format.h"

namespace kvf {
namespace {

constexpr const char* kMagic = "kvfuse-kv";
constexpr uint64_t kRowsPerH5Chunk = 64;
constexpr uint64_t kBlobBytesPerH5Chunk = 1 << 16;
constexpr uint64_t kPositionsPerH5Chunk = 1 << 14;
constexpr int64_t kMaxDim = 1 << 20;  // bounds each shape attribute, so products cannot overflow

}  // namespace

const char* kv_dtype_name(KvDtype d) {
  switch (d) {
    case KvDtype::F16: return "f16";
    case KvDtype::BF16: return "bf16";
    case KvDtype::Int8: return "int8";
    case KvDtype::Int4: return "int4";
    case KvDtype::Int3: return "int3";
    case KvDtype::Int2: return "int2";
  }
  return "?";
}

KvDtype parse_kv_dtype(const std::string& name, const std::string& what) {
  for (KvDtype d : {KvDtype::F16, KvDtype::BF16, KvDtype::Int8, KvDtype::Int4, KvDtype::Int3, KvDtype::Int2})
    if (name == kv_dtype_name(d)) return d;
  fail(what, " is '", name, "', expected f16, bf16, int8, int4, int3 or int2");
}

namespace {

h5::Handle dtype_h5_type(KvDtype d) {
  switch (d) {
    case KvDtype::F16: return h5::ieee_f16_type();
    case KvDtype::BF16: return h5::bfloat16_type();
    case KvDtype::Int8: return h5::Handle(H5Tcopy(H5T_STD_I8LE), H5Tclose);
    case KvDtype::Int4:
    case KvDtype::Int3:
    case KvDtype::Int2: break;
  }
  return h5::Handle(H5Tcopy(H5T_STD_U8LE), H5Tclose);  // low-bit: the blob's bytes
}

// f16/bf16 elements, copied byte-wise: the stored bytes are the host's uint16 (little-endian, as HDF5 is told).
// Returns the first element whose stored value is not finite (a finite f32 beyond f16's range becomes one), or n.
size_t to_stored(KvDtype d, const float* x, size_t n, uint8_t* out) {
  const uint16_t exponent = d == KvDtype::F16 ? 0x7C00 : 0x7F80;  // all ones: infinity or NaN
  uint16_t all_ones = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = d == KvDtype::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
    all_ones |= (uint16_t)((h & exponent) == exponent);
    std::memcpy(out + 2 * i, &h, 2);
  }
  if (!all_ones) return n;
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, out + 2 * i, 2);
    if ((h & exponent) == exponent) return i;
  }
  return n;
}

// Where element i of a chunk's k or v ([rows, stored_layers, kv_heads, head_dim]) lies, for messages.
std::string element_place(const KvShardLayout& l, size_t i) {
  const size_t per_head = (size_t)l.head_dim, per_layer = per_head * l.kv_heads, per_row = per_layer * l.stored_layers;
  return "row " + std::to_string(i / per_row) + ", stored layer " + std::to_string(i % per_row / per_layer) +
         ", kv head " + std::to_string(i % per_layer / per_head);
}

// Stored KV must be finite whatever its type: a model whose weights give NaN or infinity must not leave a store
// that fails `kvprep verify`. Names the chunk, the tensor and where the first such value lies.
void require_finite_kv(const KvShardLayout& l, uint64_t chunk_id, const char* which, const float* x, size_t n) {
  if (all_finite(x, n)) return;
  const size_t i = (size_t)(std::find_if(x, x + n, [](float y) { return !std::isfinite(y); }) - x);
  fail("kv shard: chunk ", hex64(chunk_id), ": ", which, " at ", element_place(l, i), " is ", x[i],
       "; stored KV must be finite (the model computed a value that is not)");
}

void from_stored(KvDtype d, const uint8_t* in, size_t n, float* x) {
  d == KvDtype::F16 ? f16_to_f32_array(in, n, x) : bf16_to_f32_array(in, n, x);
}

// XXH3-64 over the parts' bytes in order: k, v, positions (f16/bf16, as the first shards had it) or k, v,
// k_scale, v_scale, positions (int8).
uint64_t chunk_checksum(std::initializer_list<std::pair<const void*, size_t>> parts) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const auto& [data, bytes] : parts) XXH3_64bits_update(state, data, bytes);
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hash;
}

// Shared by the writer's constructor and the reader: throws naming `where` and the field.
void check_layout(const KvShardLayout& l, const std::string& where) {
  const auto in_range = [](int64_t x) { return x > 0 && x <= kMaxDim; };
  KVF_CHECK(in_range(l.n_layers), where, ": n_layers is ", l.n_layers, ", expected 1..", kMaxDim);
  KVF_CHECK(in_range(l.stored_layers), where, ": stored_layers is ", l.stored_layers, ", expected 1..", kMaxDim);
  KVF_CHECK(in_range(l.kv_heads), where, ": kv_heads is ", l.kv_heads, ", expected 1..", kMaxDim);
  KVF_CHECK(in_range(l.head_dim), where, ": head_dim is ", l.head_dim, ", expected 1..", kMaxDim);
  KVF_CHECK(l.layer_map.size() == (size_t)l.n_layers, where, ": layer_map has ", l.layer_map.size(),
            " entries, n_layers is ", l.n_layers);
  for (size_t i = 0; i < l.layer_map.size(); ++i)
    KVF_CHECK(l.layer_map[i] >= 0 && l.layer_map[i] < l.stored_layers, where, ": layer_map[", i, "] is ",
              l.layer_map[i], ", outside [0, ", l.stored_layers, ")");
  if (l.low_bit()) check_low_bit_spec(l.low_bit_spec(), l.head_dim, where);
}

int int_attribute(const h5::File& f, const std::string& name) {
  const int64_t x = f.read_int_attribute(name);
  KVF_CHECK(x > 0 && x <= kMaxDim, f.path(), ": attribute '", name, "' is ", x, ", expected 1..", kMaxDim);
  return (int)x;
}

}  // namespace

// ---- writer ----

KvShardWriter::KvShardWriter(KvShardLayout layout) : layout_(std::move(layout)) {
  check_layout(layout_, "kv shard layout");
}

void KvShardWriter::add_chunk(uint64_t chunk_id, const float* k, const float* v, const int32_t* positions,
                              uint32_t rows, uint64_t context, const double* anchor_scores) {
  KVF_CHECK(rows > 0, "kv shard: chunk ", hex64(chunk_id), " has no rows");
  KVF_CHECK(ids_.count(chunk_id) == 0, "kv shard: chunk ", hex64(chunk_id), " added twice");
  const KvDtype dtype = layout_.dtype;
  const size_t elems = (size_t)rows * layout_.row_elems();
  const size_t bytes = elems * layout_.element_bytes();
  const size_t at = k_.size();
  const size_t groups = (size_t)rows * layout_.stored_layers * layout_.kv_heads;
  const size_t scale_at = k_scale_.size();
  require_finite_kv(layout_, chunk_id, "k", k, elems);
  require_finite_kv(layout_, chunk_id, "v", v, elems);
  KvChunkEntry e;
  if (layout_.low_bit()) {
    e.first_byte = blob_.size();
    try {
      encode_low_bit_chunk(layout_.low_bit_spec(), k, v, rows, layout_.row_elems(), blob_);
    } catch (const Error& err) {
      blob_.resize(e.first_byte);  // a refused chunk leaves nothing behind
      fail("kv shard: chunk ", hex64(chunk_id), ": ", err.what());
    }
  } else if (dtype == KvDtype::Int8) {
    k_.resize(at + bytes);
    v_.resize(at + bytes);
    k_scale_.resize(scale_at + groups);
    v_scale_.resize(scale_at + groups);
    // A refused chunk leaves nothing behind, so the writer stays usable (and its checksums right).
    const char* which = "k";
    try {
      quantize_int8_groups(k, (int64_t)groups, layout_.head_dim, reinterpret_cast<int8_t*>(k_.data() + at),
                           k_scale_.data() + scale_at);
      which = "v";
      quantize_int8_groups(v, (int64_t)groups, layout_.head_dim, reinterpret_cast<int8_t*>(v_.data() + at),
                           v_scale_.data() + scale_at);
    } catch (const Error& err) {
      k_.resize(at);
      v_.resize(at);
      k_scale_.resize(scale_at);
      v_scale_.resize(scale_at);
      fail("kv shard: chunk ", hex64(chunk_id), " ", which, " (groups: row, stored layer, kv head): ",
           err.what());
    }
  } else {
    k_.resize(at + bytes);
    v_.resize(at + bytes);
    const size_t k_bad = to_stored(dtype, k, elems, k_.data() + at);
    const size_t v_bad = to_stored(dtype, v, elems, v_.data() + at);
    if (k_bad < elems || v_bad < elems) {
      k_.resize(at);  // a refused chunk leaves nothing behind
      v_.resize(at);
      const bool in_k = k_bad < elems;
      const size_t i = in_k ? k_bad : v_bad;
      fail("kv shard: chunk ", hex64(chunk_id), ": ", in_k ? "k" : "v", " at ", element_place(layout_, i), " is ",
           (in_k ? k : v)[i], ", beyond ", kv_dtype_name(dtype), "'s range; stored KV must be finite",
           dtype == KvDtype::F16 ? " (bf16 holds it: --dtype bf16)" : "");
    }
  }
  finish_entry(e, chunk_id, positions, rows, context, anchor_scores, at, scale_at);
}

void KvShardWriter::finish_entry(KvChunkEntry& e, uint64_t chunk_id, const int32_t* positions, uint32_t rows,
                                 uint64_t context, const double* anchor_scores, size_t at, size_t scale_at) {
  const size_t bytes = (size_t)rows * layout_.row_elems() * layout_.element_bytes();
  const size_t groups = (size_t)rows * layout_.stored_layers * layout_.kv_heads;
  ids_.insert(chunk_id);
  e.chunk_id = chunk_id;
  e.first_row = positions_.size();
  e.rows = rows;
  positions_.insert(positions_.end(), positions, positions + rows);
  if (anchor_scores) {
    anchor_scores_.insert(anchor_scores_.end(), anchor_scores, anchor_scores + rows);
    any_anchor_scores_ = true;
  } else {
    anchor_scores_.insert(anchor_scores_.end(), rows, std::numeric_limits<double>::quiet_NaN());
  }
  const std::pair<const void*, size_t> pos = {positions_.data() + e.first_row, rows * sizeof(int32_t)};
  e.checksum = layout_.low_bit()
                   ? chunk_checksum({{blob_.data() + e.first_byte, blob_.size() - e.first_byte}, pos})
               : layout_.dtype == KvDtype::Int8
                   ? chunk_checksum({{k_.data() + at, bytes},
                                     {v_.data() + at, bytes},
                                     {k_scale_.data() + scale_at, groups * sizeof(uint16_t)},
                                     {v_scale_.data() + scale_at, groups * sizeof(uint16_t)},
                                     pos})
                   : chunk_checksum({{k_.data() + at, bytes}, {v_.data() + at, bytes}, pos});
  e.context = context;
  index_.push_back(e);
}

void KvShardWriter::add_stored_chunk(const KvShardReader& from, const RawKvChunk& raw,
                                     const std::vector<double>& anchor_scores) {
  const KvShardLayout& l = from.layout();
  KVF_CHECK(l.mode == layout_.mode && l.model_fingerprint == layout_.model_fingerprint && l.dtype == layout_.dtype &&
                l.layer_map == layout_.layer_map && l.kv_heads == layout_.kv_heads &&
                l.head_dim == layout_.head_dim && l.quant_group == layout_.quant_group &&
                l.keep_first == layout_.keep_first && l.rotate == layout_.rotate && l.v_levels == layout_.v_levels,
            from.path(), ": its layout differs from the shard being written (mode ", layout_.mode, ")");
  from.verify_raw_checksum(raw);  // damage is not copied on
  const KvChunkEntry& source = from.index().at(raw.entry);
  KVF_CHECK(ids_.count(source.chunk_id) == 0, "kv shard: chunk ", hex64(source.chunk_id), " added twice");
  KVF_CHECK(anchor_scores.empty() || anchor_scores.size() == source.rows, "kv shard: chunk ",
            hex64(source.chunk_id), ": ", anchor_scores.size(), " anchor scores for ", source.rows, " rows");
  KvChunkEntry e;
  const size_t at = k_.size(), scale_at = k_scale_.size();
  e.first_byte = blob_.size();
  k_.insert(k_.end(), raw.k.begin(), raw.k.end());
  v_.insert(v_.end(), raw.v.begin(), raw.v.end());
  k_scale_.insert(k_scale_.end(), raw.k_scale.begin(), raw.k_scale.end());
  v_scale_.insert(v_scale_.end(), raw.v_scale.begin(), raw.v_scale.end());
  blob_.insert(blob_.end(), raw.bytes.begin(), raw.bytes.end());
  finish_entry(e, source.chunk_id, raw.positions.data(), source.rows, source.context,
               anchor_scores.empty() ? nullptr : anchor_scores.data(), at, scale_at);
  KVF_CHECK(e.checksum == source.checksum, from.path(), ": chunk ", hex64(source.chunk_id),
            " copied with another checksum");
}

uint64_t KvShardWriter::bytes() const {
  return k_.size() + v_.size() + (k_scale_.size() + v_scale_.size()) * sizeof(uint16_t) + blob_.size() +
         positions_.size() * sizeof(int32_t);
}

void KvShardWriter::set_compression(h5::Compression compression) {
  const int max_level = h5::max_compression_level(compression.codec);
  KVF_CHECK(compression.codec == h5::Compression::Codec::None || (compression.level >= 1 && compression.level <= max_level),
            "kv shard: compression ", h5::compression_name(compression), ": level outside 1..", max_level);
  compression_ = compression;
}

void KvShardWriter::write(const std::string& path) const {
  const KvShardLayout& l = layout_;
  const uint64_t n = index_.size();
  std::vector<uint64_t> ids(n), first(n), checksums(n), contexts(n), first_bytes(n);
  std::vector<uint32_t> counts(n);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = index_[i].chunk_id;
    first[i] = index_[i].first_row;
    counts[i] = index_[i].rows;
    checksums[i] = index_[i].checksum;
    contexts[i] = index_[i].context;
    first_bytes[i] = index_[i].first_byte;
  }
  PendingFile out(path);
  {
    h5::File f = h5::File::create(out.temp());
    f.write_format(kMagic, kKvShardFormatVersion);
    f.write_string_attribute("mode", l.mode);
    f.write_string_attribute("model_fingerprint", hex64(l.model_fingerprint));
    f.write_int_attribute("n_layers", l.n_layers);
    f.write_int_attribute("stored_layers", l.stored_layers);
    f.write_int_attribute("kv_heads", l.kv_heads);
    f.write_int_attribute("head_dim", l.head_dim);
    f.write_string_attribute("dtype", kv_dtype_name(l.dtype));
    const h5::Handle type = dtype_h5_type(l.dtype);
    const std::vector<uint64_t> dims = {rows(), (uint64_t)l.stored_layers, (uint64_t)l.kv_heads,
                                        (uint64_t)l.head_dim};
    if (l.low_bit()) {
      f.write_int_attribute("quant_group", l.quant_group);
      f.write_int_attribute("keep_first", l.keep_first);
      f.write_string_attribute("rotation", l.rotate ? "hadamard" : "none");
      f.write_string_attribute("v_levels", low_bit_levels_name(l.v_levels));
      f.write_raw("blob", type.get(), {blob_.size()}, blob_.data(), kBlobBytesPerH5Chunk, compression_);
    } else {
      f.write_raw("k", type.get(), dims, k_.data(), kRowsPerH5Chunk, compression_);
      f.write_raw("v", type.get(), dims, v_.data(), kRowsPerH5Chunk, compression_);
    }
    if (l.dtype == KvDtype::Int8) {
      const h5::Handle f16 = h5::ieee_f16_type();
      const std::vector<uint64_t> scale_dims = {rows(), (uint64_t)l.stored_layers, (uint64_t)l.kv_heads};
      f.write_raw("k_scale", f16.get(), scale_dims, k_scale_.data(), kRowsPerH5Chunk, compression_);
      f.write_raw("v_scale", f16.get(), scale_dims, v_scale_.data(), kRowsPerH5Chunk, compression_);
    }
    // Positions count up inside each chunk, so they shrink to almost nothing when the shard is entropy-coded.
    f.write_raw("positions", H5T_STD_I32LE, {rows()}, positions_.data(), kPositionsPerH5Chunk, compression_);
    if (any_anchor_scores_) f.write<double>("anchor_score", {rows()}, anchor_scores_.data());
    f.write<int32_t>("layer_map", {(uint64_t)l.n_layers}, l.layer_map.data());
    f.create_group("index");
    f.write<uint64_t>("index/chunk_id", {n}, ids.data());
    f.write<uint64_t>("index/first_row", {n}, first.data());
    f.write<uint32_t>("index/row_count", {n}, counts.data());
    f.write<uint64_t>("index/checksum", {n}, checksums.data());
    f.write<uint64_t>("index/context", {n}, contexts.data());
    if (l.low_bit()) f.write<uint64_t>("index/first_byte", {n}, first_bytes.data());
    f.close();
  }
  out.commit();
}

// ---- reader ----

KvShardReader::KvShardReader(const std::string& path) : file_(new h5::File(h5::File::open_read(path))) {}
KvShardReader::KvShardReader(KvShardReader&&) noexcept = default;
KvShardReader& KvShardReader::operator=(KvShardReader&&) noexcept = default;
KvShardReader::~KvShardReader() = default;

const std::string& KvShardReader::path() const { return file_->path(); }

namespace {

// ---- the steps of KvShardReader::open ----

// A low-bit shard's codec. Versions 1 and 2 knew one (no rotation, uniform V levels) and recorded none; version 3
// always records `rotation` and `v_levels`. The only place that knows the older versions' codec.
void read_low_bit_codec(const h5::File& file, int64_t version, KvShardLayout& layout) {
  if (version < 3) return;
  const std::string rotation = file.read_string_attribute("rotation");
  KVF_CHECK(rotation == "none" || rotation == "hadamard", file.path(), ": attribute 'rotation' is '", rotation,
            "', expected none or hadamard (a newer kvfuse's codec?)");
  layout.rotate = rotation == "hadamard";
  const std::string levels = file.read_string_attribute("v_levels");
  KVF_CHECK(levels == "uniform" || levels == "nf", file.path(), ": attribute 'v_levels' is '", levels,
            "', expected uniform or nf (a newer kvfuse's codec?)");
  layout.v_levels = levels == "nf" ? LowBitLevels::NormalFloat : LowBitLevels::Uniform;
}

// The attributes and the layer map: what the shard stores and in which shape, checked as the writer checks it.
KvShardLayout read_layout(const h5::File& file, int64_t version) {
  const std::string& path = file.path();
  KvShardLayout layout;
  layout.mode = file.read_string_attribute("mode");
  layout.model_fingerprint = parse_hex64(file.read_string_attribute("model_fingerprint"),
                                         path + ": attribute 'model_fingerprint'");
  layout.n_layers = int_attribute(file, "n_layers");
  layout.stored_layers = int_attribute(file, "stored_layers");
  layout.kv_heads = int_attribute(file, "kv_heads");
  layout.head_dim = int_attribute(file, "head_dim");
  layout.dtype = parse_kv_dtype(file.read_string_attribute("dtype"), path + ": attribute 'dtype'");
  if (layout.low_bit()) {
    layout.quant_group = int_attribute(file, "quant_group");
    const int64_t keep_first = file.read_int_attribute("keep_first");
    KVF_CHECK(keep_first >= 0 && keep_first <= kMaxDim, path, ": attribute 'keep_first' is ", keep_first,
              ", expected 0..", kMaxDim);
    layout.keep_first = (int)keep_first;
    read_low_bit_codec(file, version, layout);
  }
  layout.layer_map = file.read<int32_t>("layer_map", {layout.n_layers});
  check_layout(layout, path);
  return layout;
}

void require_fingerprint(const KvShardLayout& layout, uint64_t expected_fingerprint, const std::string& path) {
  KVF_CHECK(expected_fingerprint == 0 || layout.model_fingerprint == expected_fingerprint, path,
            ": KV computed with model fingerprint ", hex64(layout.model_fingerprint), ", but this model's is ",
            hex64(expected_fingerprint));
}

// The extent of the row datasets, once their types and shapes agree with the layout and with each other.
struct ShardRows {
  uint64_t rows = 0;           // rows of k, v, their scales, positions and anchor_score
  uint64_t blob_bytes = 0;     // low-bit only: the length of 'blob'
  bool anchor_scores = false;  // anchor_score (optional in every version): `kvprep prefill --anchor-scores`
};

ShardRows check_row_datasets(const h5::File& file, const KvShardLayout& layout) {
  const std::string& path = file.path();
  const h5::Handle type = dtype_h5_type(layout.dtype);
  const std::vector<uint64_t> k_shape = layout.low_bit() ? file.raw_shape("positions", H5T_STD_I32LE)
                                                         : file.raw_shape("k", type.get());
  ShardRows extent;
  extent.rows = k_shape.empty() ? 0 : k_shape[0];
  const uint64_t rows = extent.rows;
  if (layout.low_bit()) {
    const std::vector<uint64_t> blob_shape = file.raw_shape("blob", type.get());
    KVF_CHECK(blob_shape.size() == 1, path, ": dataset 'blob' is not one-dimensional bytes");
    extent.blob_bytes = blob_shape[0];
  } else {
    const std::vector<uint64_t> kv_shape = {rows, (uint64_t)layout.stored_layers, (uint64_t)layout.kv_heads,
                                            (uint64_t)layout.head_dim};
    for (const char* name : {"k", "v"})
      KVF_CHECK(file.raw_shape(name, type.get()) == kv_shape, path, ": dataset '", name,
                "' is not shaped [rows, stored_layers, kv_heads, head_dim] = [", rows, ", ", layout.stored_layers, ", ",
                layout.kv_heads, ", ", layout.head_dim, "]");
  }
  if (layout.dtype == KvDtype::Int8) {
    const h5::Handle f16 = h5::ieee_f16_type();
    const std::vector<uint64_t> scale_shape = {rows, (uint64_t)layout.stored_layers, (uint64_t)layout.kv_heads};
    for (const char* name : {"k_scale", "v_scale"})
      KVF_CHECK(file.raw_shape(name, f16.get()) == scale_shape, path, ": dataset '", name,
                "' is not shaped [rows, stored_layers, kv_heads] = [", rows, ", ", layout.stored_layers, ", ",
                layout.kv_heads, "]");
  }
  KVF_CHECK(file.raw_shape("positions", H5T_STD_I32LE) == std::vector<uint64_t>{rows}, path,
            ": dataset 'positions' is not int32 [", rows, "]");
  extent.anchor_scores = file.has("anchor_score");
  KVF_CHECK(!extent.anchor_scores || file.raw_shape("anchor_score", H5T_IEEE_F64LE) == std::vector<uint64_t>{rows},
            path, ": dataset 'anchor_score' is not f64 [", rows, "]");
  return extent;
}

// The index datasets as the current version stores them, one vector per dataset, all of one length.
struct IndexColumns {
  std::vector<uint64_t> chunk_ids, first_rows, checksums, contexts, first_bytes;
  std::vector<uint32_t> row_counts;
};

constexpr const char* kContexts = "index/context";

// Version 1, the only older version: its first shards (before similarity KV recorded its neighbour context) have
// no index/context, which means no context (0); later version-1 shards have it, read as version 2 reads it. The
// only place that knows an older version of the shard format.
std::vector<uint64_t> read_v1_contexts(const h5::File& file, int64_t entries) {
  return file.has(kContexts) ? file.read<uint64_t>(kContexts, {entries}) : std::vector<uint64_t>((size_t)entries, 0);
}

IndexColumns read_index_columns(const h5::File& file, const KvShardLayout& layout, int64_t version) {
  IndexColumns columns;
  columns.chunk_ids = file.read<uint64_t>("index/chunk_id", {-1});
  const auto entries = (int64_t)columns.chunk_ids.size();
  columns.first_rows = file.read<uint64_t>("index/first_row", {entries});
  columns.row_counts = file.read<uint32_t>("index/row_count", {entries});
  columns.checksums = file.read<uint64_t>("index/checksum", {entries});
  columns.contexts = version == 1 ? read_v1_contexts(file, entries) : file.read<uint64_t>(kContexts, {entries});
  columns.first_bytes = layout.low_bit() ? file.read<uint64_t>("index/first_byte", {entries})
                                         : std::vector<uint64_t>((size_t)entries, 0);
  return columns;
}

// The index entries, each checked to lie inside the row datasets (and the blob), no chunk id twice.
std::vector<KvChunkEntry> build_index(const IndexColumns& columns, const ShardRows& extent, const KvShardLayout& layout,
                                      const std::string& path) {
  std::vector<KvChunkEntry> index(columns.chunk_ids.size());
  std::unordered_set<uint64_t> seen;
  for (size_t i = 0; i < index.size(); ++i) {
    KvChunkEntry& entry = index[i];
    entry = {columns.chunk_ids[i], columns.first_rows[i], columns.row_counts[i],
             columns.checksums[i], columns.contexts[i],   columns.first_bytes[i]};
    KVF_CHECK(entry.rows > 0 && entry.first_row < extent.rows && entry.rows <= extent.rows - entry.first_row, path,
              ": index entry ", i, " (chunk ", hex64(entry.chunk_id), ") holds rows ", entry.first_row, "+", entry.rows,
              ", outside [0, ", extent.rows, ")");
    if (layout.low_bit()) {
      const uint64_t bytes = low_bit_chunk_bytes(layout.low_bit_spec(), entry.rows, layout.row_elems());
      KVF_CHECK(entry.first_byte <= extent.blob_bytes && bytes <= extent.blob_bytes - entry.first_byte, path,
                ": index entry ", i, " (chunk ", hex64(entry.chunk_id), ") holds bytes ", entry.first_byte, "+", bytes,
                " of 'blob', outside [0, ", extent.blob_bytes, ")");
    }
    KVF_CHECK(seen.insert(entry.chunk_id).second, path, ": index entry ", i, " repeats chunk ", hex64(entry.chunk_id));
  }
  return index;
}

// No two entries share a row (or, low-bit, a byte of the blob).
void require_disjoint_entries(const std::vector<KvChunkEntry>& index, const KvShardLayout& layout,
                              const std::string& path) {
  std::vector<size_t> by_first_row(index.size());
  for (size_t i = 0; i < by_first_row.size(); ++i) by_first_row[i] = i;
  std::sort(by_first_row.begin(), by_first_row.end(),
            [&index](size_t left, size_t right) { return index[left].first_row < index[right].first_row; });
  for (size_t i = 1; i < by_first_row.size(); ++i) {
    const KvChunkEntry& before = index[by_first_row[i - 1]];
    const KvChunkEntry& after = index[by_first_row[i]];
    const bool bytes_apart = !layout.low_bit() ||
                             before.first_byte +
                                     low_bit_chunk_bytes(layout.low_bit_spec(), before.rows, layout.row_elems()) <=
                                 after.first_byte;
    KVF_CHECK(before.first_row + before.rows <= after.first_row && bytes_apart, path, ": index entries ",
              by_first_row[i - 1], " and ", by_first_row[i], " overlap");
  }
}

}  // namespace

KvShardReader KvShardReader::open(const std::string& path, uint64_t expected_fingerprint) {
  KvShardReader reader(path);
  const h5::File& file = *reader.file_;
  reader.format_version_ = file.read_format(kMagic, kKvShardFormatVersion);
  reader.layout_ = read_layout(file, reader.format_version_);
  require_fingerprint(reader.layout_, expected_fingerprint, path);
  const ShardRows extent = check_row_datasets(file, reader.layout_);
  reader.has_anchor_scores_ = extent.anchor_scores;
  const IndexColumns columns = read_index_columns(file, reader.layout_, reader.format_version_);
  reader.index_ = build_index(columns, extent, reader.layout_, path);
  require_disjoint_entries(reader.index_, reader.layout_, path);
  return reader;
}

const KvChunkEntry& KvShardReader::entry_at(size_t entry) const {
  KVF_CHECK(entry < index_.size(), path(), ": no index entry ", entry, " (", index_.size(), " entries)");
  return index_[entry];
}

RawKvChunk& thread_raw_chunk() {
  static thread_local RawKvChunk raw;
  return raw;
}

void KvShardReader::read_chunk(size_t entry, std::vector<float>& k, std::vector<float>& v,
                               std::vector<int32_t>& positions, bool verify_checksum) const {
  RawKvChunk& raw = thread_raw_chunk();
  read_raw(entry, raw);
  positions = raw.positions;
  decode_chunk(raw, k, v, verify_checksum);
}

void KvShardReader::read_raw(size_t entry, RawKvChunk& raw) const {
  const KvChunkEntry& e = entry_at(entry);
  const bool int8 = layout_.dtype == KvDtype::Int8, low_bit = layout_.low_bit();
  const size_t bytes = low_bit ? 0 : (size_t)e.rows * layout_.row_elems() * layout_.element_bytes();
  const size_t groups = int8 ? (size_t)e.rows * layout_.stored_layers * layout_.kv_heads : 0;
  raw.entry = entry;
  raw.chunk_id = e.chunk_id;
  raw.k.resize(bytes);
  raw.v.resize(bytes);
  raw.k_scale.resize(groups);
  raw.v_scale.resize(groups);
  raw.bytes.resize(low_bit ? low_bit_chunk_bytes(layout_.low_bit_spec(), e.rows, layout_.row_elems()) : 0);
  raw.positions.resize(e.rows);
  if (low_bit) {
    file_->read_raw_rows("blob", H5T_STD_U8LE, e.first_byte, raw.bytes.size(), raw.bytes.data());
  } else {
    const h5::Handle type = dtype_h5_type(layout_.dtype);
    file_->read_raw_rows("k", type.get(), e.first_row, e.rows, raw.k.data());
    file_->read_raw_rows("v", type.get(), e.first_row, e.rows, raw.v.data());
  }
  if (int8) {
    const h5::Handle f16 = h5::ieee_f16_type();
    file_->read_raw_rows("k_scale", f16.get(), e.first_row, e.rows, raw.k_scale.data());
    file_->read_raw_rows("v_scale", f16.get(), e.first_row, e.rows, raw.v_scale.data());
  }
  file_->read_raw_rows("positions", H5T_NATIVE_INT32, e.first_row, e.rows, raw.positions.data());
}

h5::Compression KvShardReader::compression() const { return file_->compression(layout_.low_bit() ? "blob" : "k"); }

uint64_t KvShardReader::stored_kv_bytes() const {
  uint64_t bytes = file_->stored_bytes("positions");
  if (layout_.low_bit()) return bytes + file_->stored_bytes("blob");
  bytes += file_->stored_bytes("k") + file_->stored_bytes("v");
  if (layout_.dtype == KvDtype::Int8) bytes += file_->stored_bytes("k_scale") + file_->stored_bytes("v_scale");
  return bytes;
}

// The checksum add_chunk computed, over the same parts.
void KvShardReader::verify_raw_checksum(const RawKvChunk& raw) const {
  const KvChunkEntry& e = entry_at(raw.entry);
  const auto part = [](const auto& x) { return std::pair<const void*, size_t>{x.data(), x.size() * sizeof(x[0])}; };
  const uint64_t found =
      layout_.low_bit()                    ? chunk_checksum({part(raw.bytes), part(raw.positions)})
      : layout_.dtype == KvDtype::Int8 ? chunk_checksum({part(raw.k), part(raw.v), part(raw.k_scale),
                                                           part(raw.v_scale), part(raw.positions)})
                                           : chunk_checksum({part(raw.k), part(raw.v), part(raw.positions)});
  KVF_CHECK(found == e.checksum, path(), ": chunk ", hex64(e.chunk_id), " (index entry ", raw.entry,
            ") has checksum ", hex64(found), ", the index records ", hex64(e.checksum));
}

void KvShardReader::decode_chunk(const RawKvChunk& raw, std::vector<float>& k, std::vector<float>& v,
                                 bool verify_checksum) const {
  const int64_t rows = entry_at(raw.entry).rows, layers = layout_.stored_layers, width = layout_.row_elems() / layers;
  k.resize((size_t)(rows * layers * width));
  v.resize(k.size());
  KvRowsOut out;
  out.row_stride = layers * width;
  for (int64_t s = 0; s < layers; ++s) {
    out.k.push_back(k.data() + s * width);
    out.v.push_back(v.data() + s * width);
  }
  decode_chunk(raw, out, verify_checksum);
}

void KvShardReader::decode_chunk(const RawKvChunk& raw, const KvRowsOut& out, bool verify_checksum) const {
  const KvChunkEntry& e = entry_at(raw.entry);
  if (verify_checksum) verify_raw_checksum(raw);
  const int64_t layers = layout_.stored_layers, heads = layout_.kv_heads, width = heads * layout_.head_dim;
  KVF_CHECK((int64_t)out.k.size() == layers && (int64_t)out.v.size() == layers, "chunk KV decode: ", out.k.size(),
            " destination layers for ", layers, " stored layers");
  const KvDtype dtype = layout_.dtype;
  if (dtype == KvDtype::Int8) {
    // The writer only makes finite scales >= 0; anything else is damage that unchecked reads must not pass on.
    const size_t groups = (size_t)e.rows * layers * heads;
    for (const auto& [name, scales] :
         {std::make_pair("k_scale", &raw.k_scale), std::make_pair("v_scale", &raw.v_scale)})
      for (size_t g = 0; g < groups; ++g) {
        const float sc = f16_to_f32((*scales)[g]);
        KVF_CHECK(sc >= 0 && std::isfinite(sc), path(), ": chunk ", hex64(e.chunk_id), " (index entry ", raw.entry,
                  "): ", name, " of row ", e.first_row + g / (layers * heads), ", stored layer ", g / heads % layers,
                  ", kv head ", g % heads, " is ", sc, ", expected a finite scale >= 0");
      }
  }
  // Low-bit chunks decode whole (core/low_bit_kv.h): in place when `out` is the interleaved layout, else into a
  // buffer whose rows are then handed out like the others'.
  static thread_local std::vector<float> low_bit_k, low_bit_v;
  bool interleaved = out.row_stride == layers * width;
  for (int64_t s = 0; s < layers; ++s)
    interleaved = interleaved && out.k[(size_t)s] == out.k[0] + s * width && out.v[(size_t)s] == out.v[0] + s * width;
  const bool low_bit_in_place = layout_.low_bit() && interleaved;
  if (layout_.low_bit()) {
    if (!low_bit_in_place) {
      low_bit_k.resize((size_t)(e.rows * layers * width));
      low_bit_v.resize(low_bit_k.size());
    }
    // The writer only makes finite scales and minimums; anything else is damage that unchecked reads must not pass on.
    KVF_CHECK(decode_low_bit_chunk(layout_.low_bit_spec(), raw.bytes.data(), e.rows, layout_.row_elems(),
                                   low_bit_in_place ? out.k[0] : low_bit_k.data(),
                                   low_bit_in_place ? out.v[0] : low_bit_v.data()),
              path(), ": chunk ", hex64(e.chunk_id), " (index entry ", raw.entry,
              ") has a scale or minimum that is not finite");
  }
  const size_t element_bytes = layout_.low_bit() ? 0 : layout_.element_bytes();
  for (int64_t r = 0; r < e.rows; ++r)
    for (int64_t s = 0; s < layers; ++s) {
      const int64_t at = r * layers + s;  // the stored row of (chunk row r, stored layer s)
      float* k = out.k[(size_t)s] + r * out.row_stride;
      float* v = out.v[(size_t)s] + r * out.row_stride;
      if (low_bit_in_place) {
        // decoded where it belongs
      } else if (layout_.low_bit()) {
        std::memcpy(k, low_bit_k.data() + at * width, (size_t)width * sizeof(float));
        std::memcpy(v, low_bit_v.data() + at * width, (size_t)width * sizeof(float));
      } else if (dtype != KvDtype::Int8) {
        from_stored(dtype, raw.k.data() + at * width * element_bytes, (size_t)width, k);
        from_stored(dtype, raw.v.data() + at * width * element_bytes, (size_t)width, v);
      } else {
        dequantize_int8_groups(reinterpret_cast<const int8_t*>(raw.k.data()) + at * width,
                               raw.k_scale.data() + at * heads, heads, layout_.head_dim, k);
        dequantize_int8_groups(reinterpret_cast<const int8_t*>(raw.v.data()) + at * width,
                               raw.v_scale.data() + at * heads, heads, layout_.head_dim, v);
      }
      if (verify_checksum) require_finite(e, r, s, k, v);
    }
}

// Checked row by row as it is converted, while it is in cache.
void KvShardReader::require_finite(const KvChunkEntry& e, int64_t row, int64_t layer, const float* k,
                                   const float* v) const {
  const size_t width = (size_t)layout_.kv_heads * layout_.head_dim;
  if (all_finite(k, width) && all_finite(v, width)) return;
  for (const auto& [name, values] : {std::make_pair("k", k), std::make_pair("v", v)})
    for (size_t i = 0; i < width; ++i)
      KVF_CHECK(std::isfinite(values[i]), path(), ": chunk ", hex64(e.chunk_id), " (index entry ",
                &e - index_.data(), "): ", name, " of row ", e.first_row + row, ", stored layer ", layer, " is ",
                values[i], "; stored KV must be finite");
}

std::vector<double> KvShardReader::read_anchor_scores(size_t entry) const {
  KVF_CHECK(entry < index_.size(), path(), ": no entry ", entry);
  if (!has_anchor_scores_) return {};
  const KvChunkEntry& e = index_[entry];
  std::vector<double> scores(e.rows);
  file_->read_raw_rows("anchor_score", H5T_NATIVE_DOUBLE, e.first_row, e.rows, scores.data());
  for (const double x : scores)  // NaN: a chunk added without scores; anything else not finite: damage
    if (!std::isfinite(x)) {
      KVF_CHECK(std::isnan(x), path(), ": chunk ", hex64(e.chunk_id), " has an infinite anchor score");
      return {};
    }
  return scores;
}

void KvShardReader::check_low_bit_encoded(const RawKvChunk& raw) const {
  const KvChunkEntry& e = entry_at(raw.entry);
  KVF_CHECK(layout_.low_bit(), path(), ": a ", kv_dtype_name(layout_.dtype), " shard has no low-bit encoding");
  verify_raw_checksum(raw);
  KVF_CHECK(low_bit_chunk_finite(layout_.low_bit_spec(), raw.bytes.data(), e.rows, layout_.row_elems()), path(),
            ": chunk ", hex64(e.chunk_id), " (index entry ", raw.entry,
            ") has a kept value, scale or minimum that is not finite; stored KV must be finite");
}

std::vector<std::string> verify_kv_shard(const std::string& path, uint64_t expected_fingerprint) {
  std::vector<std::string> problems;
  try {
    const KvShardReader reader = KvShardReader::open(path, expected_fingerprint);
    std::vector<float> k, v;
    std::vector<int32_t> positions;
    for (size_t i = 0; i < reader.index().size(); ++i) {
      try {
        reader.read_chunk(i, k, v, positions, true);
      } catch (const std::exception& e) {  // kvf::Error, or bad_alloc for absurd sizes
        problems.emplace_back(e.what());
      }
    }
  } catch (const std::exception& e) {
    problems.emplace_back(e.what());
  }
  return problems;
}

}  // namespace kvf
