// GGUF reader (versions 2 and 3): metadata of every value type, tensor infos, alignment. The file is memory-mapped;
// every offset and length is bounds-checked at open, so a malformed file raises kvf::Error naming the file and
// the field, never a crash or a read past the end.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"

#include "core/ggml_types.h"

namespace kvf::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* value_type_name(ValueType t);  // "UINT32", "STRING", ... as the GGUF spec names them
bool is_integer_type(ValueType t);         // the integer types and BOOL
bool is_float_type(ValueType t);           // F32, F64

// Shared by the reader and the writer.
inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr int kMaxArrayDepth = 8;            // arrays of arrays nest at most this deep

// One metadata value. Scalars fill exactly one of the scalar fields; arrays fill the vector for their element
// type (integers and bools in ints, floats in floats, strings in strings; nested arrays in array).
struct Value {
  ValueType type = ValueType::U8;
  ValueType elem_type = ValueType::U8;  // for ARRAY
  int64_t i = 0;        // all integer types and BOOL (u64 above INT64_MAX is rejected)
  double f = 0.0;       // F32, F64
  std::string s;        // STRING
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  std::vector<Value> array;  // arrays of arrays
  size_t array_size() const;
};

// Values as the reader returns them (for metadata built in memory, File::assemble).
Value string_value(std::string s);
Value int_value(int64_t i, ValueType type = ValueType::U32);
Value float_value(double f);  // F32: rounded to float, as a converter writing the file stores it
Value bool_value(bool b);
Value string_array_value(std::vector<std::string> strings);
Value int_array_value(std::vector<int64_t> ints, ValueType elem_type = ValueType::I32);

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the fastest-varying (row length)
  uint64_t offset = 0;      // from the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  int64_t rows() const;     // product of ne[1..]
};

// A File put together in memory from another format's parts (io/hf_folder.h reads a Hugging Face folder into
// one): metadata, tensor infos (offset unused) and each tensor's bytes, which live in `storage` (mappings or
// buffers the File keeps alive).
struct Parts {
  std::string path;  // what errors name
  std::map<std::string, Value> metadata;
  std::vector<TensorInfo> tensors;
  std::vector<const uint8_t*> data;  // one per tensor, n_bytes long
  std::vector<std::shared_ptr<const void>> storage;
};

class File {
 public:
  // Maps and parses the file; throws kvf::Error("<path>: ...") on any problem.
  static std::shared_ptr<const File> open(const std::string& path);
  // Takes the parts as they are; throws kvf::Error naming a tensor that appears twice or has no bytes.
  static std::shared_ptr<const File> assemble(Parts parts);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  const Value& get(const std::string& key) const;  // throws "<path>: missing metadata key '<key>'"
  const std::map<std::string, Value>& metadata() const { return kv_; }
  // Typed accessors: throw naming the key and the actual type when it does not fit.
  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;  // any integer type or BOOL
  double get_float(const std::string& key) const; // F32/F64 or any integer type
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<double> get_float_array(const std::string& key) const;
  // With defaults when the key is absent (still throw on a wrong type).
  std::string get_string(const std::string& key, const std::string& dflt) const;
  int64_t get_int(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key, double dflt) const;
  bool get_bool(const std::string& key, bool dflt) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;  // nullptr if absent
  const TensorInfo& tensor(const std::string& name) const;       // throws naming the tensor
  // Pointer to the tensor's bytes (n_bytes long, checked to lie inside the file at open; nullptr for an empty
  // tensor placed at the very end).
  const uint8_t* tensor_data(const TensorInfo& info) const;
  // Converts rows [first_row, first_row + n_rows) to f32 into dst (n_rows * ne[0] floats); throws naming the
  // tensor and its type when the type cannot be converted, or when the rows are out of range.
  void dequantize_rows(const TensorInfo& info, int64_t first_row, int64_t n_rows, float* dst) const;

 private:
  File() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, Value> kv_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
  MappedFile mapping_;
  uint64_t data_offset_ = 0;
  std::vector<const uint8_t*> assembled_data_;  // assemble(): each tensor's bytes, by tensor index
  std::vector<std::shared_ptr<const void>> storage_;
  friend class Parser;
};

}  // namespace kvf::gguf
