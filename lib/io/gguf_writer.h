// GGUF writer (version 3, or 2 on request) for tests and tools that make small models: collects metadata and
// tensors in memory, then writes "<path>.<pid>.tmp" and renames it over <path> (io/durable_file.h). Keys and
// tensors keep their order.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/ggml_types.h"
#include "io/gguf.h"

namespace kvf::gguf {

class Writer {
 public:
  explicit Writer(uint32_t version = 3);  // 2 or 3

  // Any value the reader returns, arrays of arrays included; integers must fit their type (checked here).
  void add_value(const std::string& key, const Value& value);
  void add_u8(const std::string& key, uint8_t v);
  void add_i8(const std::string& key, int8_t v);
  void add_u16(const std::string& key, uint16_t v);
  void add_i16(const std::string& key, int16_t v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);  // at most INT64_MAX, as the reader accepts
  void add_i64(const std::string& key, int64_t v);
  void add_f32(const std::string& key, float v);
  void add_f64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
  void add_f32_array(const std::string& key, const std::vector<float>& v);
  // "general.alignment" (u32): data offsets become multiples of it (default 32).
  void set_alignment(uint32_t alignment);

  // ne in ggml order (ne[0] = row length). Raw bytes must be exactly ggml_row_bytes(type, ne[0]) * rows.
  void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, const void* data,
                  size_t n_bytes);
  // f32 data (product of ne elements) stored as store_as, quantized row by row with quantize_row.
  void add_tensor_f32(const std::string& name, const std::vector<int64_t>& ne, const float* data,
                      GgmlType store_as = GgmlType::F32);

  // Writes the file; throws kvf::Error naming the path on any I/O failure (the .tmp file is removed).
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;
  };
  void add_scalar(const std::string& key, ValueType type, int64_t i);
  void add_tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne,
                        std::vector<uint8_t> bytes);
  std::vector<uint8_t> encode() const;  // header, metadata and tensor infos, padded to the alignment

  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace kvf::gguf
