// KV shards of the store (kv/<mode>-NNNNN.h5): the stored K (pre-RoPE) and V rows of many chunks, one row per
// token, with each chunk's place and checksum in an index. Format: docs/store.md ("KV shards").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/low_bit_kv.h"
#include "store/h5_compression.h"

namespace kvf {

namespace h5 {
class File;
}

// F16, BF16: 2 bytes per value. Int8: 1 byte per value plus one f16 scale per row, stored layer and kv head
// (core/int8_rows.h). Int4, Int3, Int2: per chunk one byte string of codes, f16 scales and minimums, and the leading
// rows kept in f16 (core/low_bit_kv.h; K per channel over groups of rows, V per row over groups of values;
// optionally Hadamard-rotated, and V with nf levels).
enum class KvDtype : uint8_t { F16, BF16, Int8, Int4, Int2, Int3 };

const char* kv_dtype_name(KvDtype dtype);  // "f16", "bf16", "int8", "int4", "int3", "int2"
// The dtype kv_dtype_name calls `name`; any other name throws kvf::Error "<what> is '<name>', expected f16, bf16,
// int8, int4, int3 or int2".
KvDtype parse_kv_dtype(const std::string& name, const std::string& what = "the KV dtype");

struct KvShardLayout {
  std::string mode;                  // "independent", "similarity", ...
  uint64_t model_fingerprint = 0;
  int n_layers = 0;                  // layers of the model
  std::vector<int32_t> layer_map;    // n_layers entries: stored layer index that layer i reads (identity = no sharing)
  int stored_layers = 0;             // distinct stored layers
  int kv_heads = 0, head_dim = 0;
  KvDtype dtype = KvDtype::F16;
  int quant_group = 0, keep_first = 0;  // Int4, Int3 and Int2 only (core/low_bit_kv.h)
  bool rotate = false;                  // Int4, Int3 and Int2 only: the Hadamard-rotated codec
  LowBitLevels v_levels = LowBitLevels::Uniform;  // Int4, Int3 and Int2 only: V's levels
  int64_t row_elems() const { return (int64_t)stored_layers * kv_heads * head_dim; }
  int64_t element_bytes() const { return dtype == KvDtype::Int8 ? 1 : 2; }  // f16, bf16, int8
  bool low_bit() const { return dtype == KvDtype::Int4 || dtype == KvDtype::Int3 || dtype == KvDtype::Int2; }
  LowBitSpec low_bit_spec() const {
    return {dtype == KvDtype::Int2 ? 2 : dtype == KvDtype::Int3 ? 3 : 4, quant_group, keep_first, rotate, v_levels,
            head_dim};
  }
  // Stored bytes of one row (one token): k and v, their scales (and minimums), and the position. Low-bit: K's
  // group parameters spread over the group's rows, leaving out the rows kept in f16.
  double bytes_per_row() const {
    if (low_bit()) {
      const LowBitSpec s = low_bit_spec();
      const double v_params = s.v_levels == LowBitLevels::NormalFloat ? 2.0 : 4.0;  // nf: a scale, no minimum
      return (double)row_elems() * (2.0 * s.bits / 8 + 4.0 / s.group + v_params / s.group) + 4;
    }
    const double scales = dtype == KvDtype::Int8 ? 2.0 * stored_layers * kv_heads * 2 : 0;
    return (double)row_elems() * element_bytes() * 2 + scales + 4;
  }
};

struct KvChunkEntry {
  uint64_t chunk_id = 0;
  uint64_t first_row = 0;
  uint32_t rows = 0;
  uint64_t checksum = 0;  // XXH3-64 over the chunk's stored k, v, (int8 only: k_scale, v_scale,) positions bytes
  uint64_t context = 0;   // what the KV was computed after (similarity: a hash of the neighbour ids); 0: nothing
  uint64_t first_byte = 0;  // low-bit only: where the chunk's bytes start in `blob` (their count follows from rows)
};

// One chunk as the shard stores it, neither checked nor converted: KvShardReader::read_raw fills it (HDF5, one
// thread at a time) and decode_chunk checks and converts it (no HDF5: any thread, so loads decode in parallel).
struct RawKvChunk {
  size_t entry = 0;                        // in the reader's index, which holds the chunk's rows and checksum
  uint64_t chunk_id = 0;                   // the entry's: a KvModeReader finds the shard by it
  std::vector<uint8_t> k, v;               // f16, bf16, int8: the stored elements
  std::vector<uint16_t> k_scale, v_scale;  // int8 only: f16 bits, [rows, stored_layers, kv_heads]
  std::vector<uint8_t> bytes;              // low-bit only: the chunk's encoding (core/low_bit_kv.h)
  std::vector<int32_t> positions;
};

// Where a decoded chunk goes: stored layer s's row r at k[s] + r * row_stride (width floats; likewise v).
struct KvRowsOut {
  std::vector<float*> k, v;
  int64_t row_stride = 0;
};

// This thread's RawKvChunk, whose buffers outlive the chunk: fresh pages for every chunk cost more than converting
// them. Whoever holds it must not call anything that takes it too (read_chunk does).
RawKvChunk& thread_raw_chunk();

class KvShardReader;

class KvShardWriter {
 public:
  explicit KvShardWriter(KvShardLayout layout);  // throws kvf::Error on an inconsistent layout
  // k, v: host f32, row-major [rows, stored_layers, kv_heads, head_dim]; positions: in-chunk position per row.
  // Converts to the layout's dtype now (so memory held is the stored size) and computes the checksum.
  // A chunk id already added, or rows == 0, is refused; so is, for every dtype, a value that is not finite or that
  // the dtype cannot hold finitely (nothing is kept; the message names the chunk, k or v, row, layer and head).
  // anchor_scores: rows values, the attention each row received during prefill (prep/received_attention.h), kept
  // so that anchor selection needs no second precompute; a shard stores them when any chunk has them.
  void add_chunk(uint64_t chunk_id, const float* k, const float* v, const int32_t* positions, uint32_t rows,
                 uint64_t context = 0, const double* anchor_scores = nullptr);
  // A chunk as another shard of the same layout stores it (read_raw), bytes unchanged: its checksum is verified
  // first, and its context and, when given, its anchor scores are kept. For rewriting shards without re-encoding.
  void add_stored_chunk(const KvShardReader& from, const RawKvChunk& raw, const std::vector<double>& anchor_scores);
  size_t chunks() const { return index_.size(); }
  uint64_t rows() const { return positions_.size(); }
  uint64_t bytes() const;  // stored bytes held so far (k, v, int8 scales, positions): rows() * bytes_per_row()
  // How k, v and their scales (or the low-bit bytes) are stored (default: uncompressed, the fastest reads).
  void set_compression(h5::Compression compression);
  // Writes a temporary and commits it to <path> (io/durable_file.h); on any failure <path> is untouched.
  void write(const std::string& path) const;

 private:
  // The entry of a chunk whose stored bytes were appended at `at` (k, v) and `scale_at` (int8 scales), or at
  // e.first_byte (low-bit): rows, positions, anchor scores, context and checksum.
  void finish_entry(KvChunkEntry& e, uint64_t chunk_id, const int32_t* positions, uint32_t rows, uint64_t context,
                    const double* anchor_scores, size_t at, size_t scale_at);
  KvShardLayout layout_;
  std::vector<uint8_t> k_, v_;               // stored elements, element_bytes() each (f16/bf16 host order = LE)
  std::vector<uint16_t> k_scale_, v_scale_;  // int8 only: f16 bits, [rows, stored_layers, kv_heads]
  std::vector<uint8_t> blob_;                // low-bit only: the chunks' byte strings, one after another
  std::vector<int32_t> positions_;
  std::vector<double> anchor_scores_;  // per row; NaN for chunks added without
  bool any_anchor_scores_ = false;
  std::vector<KvChunkEntry> index_;
  std::unordered_set<uint64_t> ids_;
  h5::Compression compression_;
};

class KvShardReader {
 public:
  // Opens and validates: magic, version, attributes vs dataset shapes and types, index bounds (rows within
  // [0, total), no overlap, no repeated chunk id), layer_map values in [0, stored_layers). A nonzero
  // expected_fingerprint must equal the shard's. Throws kvf::Error naming the file and the field; a shard of a
  // format version newer than kKvShardFormatVersion (store/store_format.h) is refused naming the version. An older
  // version reads as the current one (a version-1 shard without index/context: every context 0).
  static KvShardReader open(const std::string& path, uint64_t expected_fingerprint = 0);
  KvShardReader(KvShardReader&&) noexcept;
  KvShardReader& operator=(KvShardReader&&) noexcept;
  ~KvShardReader();

  const std::string& path() const;
  int64_t format_version() const { return format_version_; }  // as the file records it (1, 2 or 3)
  const KvShardLayout& layout() const { return layout_; }
  const std::vector<KvChunkEntry>& index() const { return index_; }
  // Reads one chunk's rows (a row-range read; low-bit: its byte range) converted to f32 [rows, stored_layers,
  // kv_heads, head_dim]; checks its checksum and that every value is finite when verify_checksum (kvf::Error naming
  // the file, the chunk and the mismatch or value). Int8: dequantized with the scales of the same rows; a negative,
  // NaN or infinite scale is a kvf::Error naming the chunk and the value. It is read_raw, then decode_chunk.
  void read_chunk(size_t entry, std::vector<float>& k, std::vector<float>& v, std::vector<int32_t>& positions,
                  bool verify_checksum = false) const;
  // Only the HDF5 reads of read_chunk, into raw's buffers (kept: their pages are reused). One thread at a time.
  void read_raw(size_t entry, RawKvChunk& raw) const;
  // The rest of read_chunk, on what read_raw filled (raw.positions are the chunk's). No HDF5: any thread, any time.
  void decode_chunk(const RawKvChunk& raw, std::vector<float>& k, std::vector<float>& v,
                    bool verify_checksum = false) const;
  // The same, each stored layer's rows written where `out` says (no interleaved copy in between).
  void decode_chunk(const RawKvChunk& raw, const KvRowsOut& out, bool verify_checksum = false) const;
  // For readers that keep a low-bit chunk encoded (KvSegment::encoded; raw.bytes, core/low_bit_kv.h): its checksum
  // and that every kept value, scale and minimum is finite (so every value it decodes to is), kvf::Error naming
  // the chunk otherwise, or the shard if it is not low-bit. No HDF5, like decode_chunk.
  void check_low_bit_encoded(const RawKvChunk& raw) const;
  // The chunk's anchor scores recorded during prefill (one per row), or empty when the shard or chunk has none.
  std::vector<double> read_anchor_scores(size_t entry) const;
  // How its K (or low-bit bytes) were stored (KvShardWriter::set_compression).
  h5::Compression compression() const;
  // Bytes its K, V, scales or low-bit bytes and its positions take in the file (after compression).
  uint64_t stored_kv_bytes() const;
  // Whether what read_raw filled has the checksum the index records; kvf::Error naming the chunk otherwise.
  void verify_raw_checksum(const RawKvChunk& raw) const;

 private:
  void require_finite(const KvChunkEntry& e, int64_t row, int64_t layer, const float* k, const float* v) const;
  const KvChunkEntry& entry_at(size_t entry) const;  // throws for an entry past the index
  explicit KvShardReader(const std::string& path);
  std::unique_ptr<h5::File> file_;  // kept open for row-range reads; one thread at a time (HDF5 1.10)
  int64_t format_version_ = 0;
  KvShardLayout layout_;
  std::vector<KvChunkEntry> index_;
  bool has_anchor_scores_ = false;
};

// Re-reads every chunk and recomputes its checksum; returns one line per problem (empty: the shard is sound).
// Never throws for a damaged file: a file that cannot be opened is itself a problem line.
std::vector<std::string> verify_kv_shard(const std::string& path, uint64_t expected_fingerprint = 0);

}  // namespace kvf
