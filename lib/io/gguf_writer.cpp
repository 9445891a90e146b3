#include "io/gguf_writer.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <tbb/parallel_for.h>

#include "core/error.h"
#include "io/durable_file.h"

namespace kvf::gguf {

namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Inclusive range of the integer types (BOOL is 0..1).
std::pair<int64_t, int64_t> int_range(ValueType t) {
  switch (t) {
    case ValueType::U8: return {0, 255};
    case ValueType::I8: return {-128, 127};
    case ValueType::U16: return {0, 65535};
    case ValueType::I16: return {-32768, 32767};
    case ValueType::U32: return {0, 4294967295LL};
    case ValueType::I32: return {INT32_MIN, INT32_MAX};
    case ValueType::U64: return {0, INT64_MAX};
    case ValueType::BOOL: return {0, 1};
    default: return {INT64_MIN, INT64_MAX};
  }
}

void check_int(const std::string& key, ValueType t, int64_t v) {
  const auto [lo, hi] = int_range(t);
  KVF_CHECK(v >= lo && v <= hi, "gguf writer: metadata '", key, "': ", v, " does not fit ", value_type_name(t));
}

// Checks what encoding relies on: known types, integers in range, arrays whose elements are all arrays.
void check_value(const std::string& key, const Value& v, int depth) {
  KVF_CHECK((uint32_t)v.type <= (uint32_t)ValueType::F64, "gguf writer: metadata '", key, "': unknown type ",
            (uint32_t)v.type);
  if (v.type == ValueType::ARRAY) {
    KVF_CHECK(depth < kMaxArrayDepth, "gguf writer: metadata '", key, "': arrays nested deeper than ", kMaxArrayDepth);
    KVF_CHECK((uint32_t)v.elem_type <= (uint32_t)ValueType::F64, "gguf writer: metadata '", key,
              "': unknown element type ", (uint32_t)v.elem_type);
    if (v.elem_type == ValueType::ARRAY) {
      for (const Value& e : v.array) {
        KVF_CHECK(e.type == ValueType::ARRAY, "gguf writer: metadata '", key, "': element of an array of arrays is ",
                  value_type_name(e.type));
        check_value(key, e, depth + 1);
      }
    } else if (v.elem_type != ValueType::STRING && !is_float_type(v.elem_type)) {
      for (int64_t i : v.ints) check_int(key, v.elem_type, i);
    }
  } else if (v.type != ValueType::STRING && !is_float_type(v.type)) {
    check_int(key, v.type, v.i);
  }
}

class Buffer {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  // One scalar of type t taken from the slot its type uses (already range-checked).
  void put_scalar(ValueType t, int64_t i, double f, const std::string& s) {
    switch (t) {
      case ValueType::U8:
      case ValueType::BOOL: return put<uint8_t>((uint8_t)i);
      case ValueType::I8: return put<int8_t>((int8_t)i);
      case ValueType::U16: return put<uint16_t>((uint16_t)i);
      case ValueType::I16: return put<int16_t>((int16_t)i);
      case ValueType::U32: return put<uint32_t>((uint32_t)i);
      case ValueType::I32: return put<int32_t>((int32_t)i);
      case ValueType::U64: return put<uint64_t>((uint64_t)i);
      case ValueType::I64: return put<int64_t>(i);
      case ValueType::F32: return put<float>((float)f);
      case ValueType::F64: return put<double>(f);
      case ValueType::STRING: return put_string(s);
      case ValueType::ARRAY: return;  // arrays go through put_value
    }
  }
  // The value without its type tag (the tag precedes it in a key-value, not inside arrays).
  void put_value(const Value& v) {
    if (v.type != ValueType::ARRAY) return put_scalar(v.type, v.i, v.f, v.s);
    put<uint32_t>((uint32_t)v.elem_type);
    put<uint64_t>(v.array_size());
    const std::string none;
    if (v.elem_type == ValueType::ARRAY) {
      for (const Value& e : v.array) put_value(e);
    } else if (v.elem_type == ValueType::STRING) {
      for (const std::string& s : v.strings) put_string(s);
    } else if (is_float_type(v.elem_type)) {
      for (double f : v.floats) put_scalar(v.elem_type, 0, f, none);
    } else {
      for (int64_t i : v.ints) put_scalar(v.elem_type, i, 0, none);
    }
  }
  std::vector<uint8_t> bytes;
};

// Rows (product of ne[1..]) after checking the shape the reader will accept.
int64_t checked_rows(const std::string& name, const std::vector<int64_t>& ne) {
  KVF_CHECK(ne.size() <= 4, "gguf writer: tensor '", name, "' has ", ne.size(), " dimensions (at most 4)");
  int64_t rows = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    KVF_CHECK(ne[d] >= 0, "gguf writer: tensor '", name, "': dimension ", d, " is ", ne[d]);
    if (d > 0) rows *= ne[d];
  }
  return rows;
}

Value array_of(ValueType elem) {
  Value v;
  v.type = ValueType::ARRAY;
  v.elem_type = elem;
  return v;
}

}  // namespace

Writer::Writer(uint32_t version) : version_(version) {
  KVF_CHECK(version == 2 || version == 3, "gguf writer: version ", version, " (only 2 and 3 can be written)");
}

void Writer::add_value(const std::string& key, const Value& value) {
  for (const auto& kv : kv_) KVF_CHECK(kv.first != key, "gguf writer: duplicate metadata key '", key, "'");
  check_value(key, value, 0);
  if (key == "general.alignment") {
    KVF_CHECK(value.type == ValueType::U32 && value.i > 0 && (value.i & (value.i - 1)) == 0,
              "gguf writer: general.alignment must be a UINT32 power of two");
    alignment_ = (uint64_t)value.i;
  }
  kv_.emplace_back(key, value);
}

void Writer::add_scalar(const std::string& key, ValueType type, int64_t i) {
  Value v;
  v.type = type;
  v.i = i;
  add_value(key, v);
}

void Writer::add_u8(const std::string& key, uint8_t v) { add_scalar(key, ValueType::U8, v); }
void Writer::add_i8(const std::string& key, int8_t v) { add_scalar(key, ValueType::I8, v); }
void Writer::add_u16(const std::string& key, uint16_t v) { add_scalar(key, ValueType::U16, v); }
void Writer::add_i16(const std::string& key, int16_t v) { add_scalar(key, ValueType::I16, v); }
void Writer::add_u32(const std::string& key, uint32_t v) { add_scalar(key, ValueType::U32, v); }
void Writer::add_i32(const std::string& key, int32_t v) { add_scalar(key, ValueType::I32, v); }
void Writer::add_i64(const std::string& key, int64_t v) { add_scalar(key, ValueType::I64, v); }
void Writer::add_bool(const std::string& key, bool v) { add_scalar(key, ValueType::BOOL, v ? 1 : 0); }
void Writer::set_alignment(uint32_t alignment) { add_u32("general.alignment", alignment); }

void Writer::add_u64(const std::string& key, uint64_t v) {
  KVF_CHECK(v <= (uint64_t)INT64_MAX, "gguf writer: metadata '", key, "': UINT64 ", v, " is above INT64_MAX");
  add_scalar(key, ValueType::U64, (int64_t)v);
}

void Writer::add_f32(const std::string& key, float v) {
  Value val;
  val.type = ValueType::F32;
  val.f = v;
  add_value(key, val);
}

void Writer::add_f64(const std::string& key, double v) {
  Value val;
  val.type = ValueType::F64;
  val.f = v;
  add_value(key, val);
}

void Writer::add_string(const std::string& key, const std::string& v) {
  Value val;
  val.type = ValueType::STRING;
  val.s = v;
  add_value(key, val);
}

void Writer::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  Value val = array_of(ValueType::STRING);
  val.strings = v;
  add_value(key, val);
}

void Writer::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  Value val = array_of(ValueType::I32);
  val.ints.assign(v.begin(), v.end());
  add_value(key, val);
}

void Writer::add_f32_array(const std::string& key, const std::vector<float>& v) {
  Value val = array_of(ValueType::F32);
  val.floats.assign(v.begin(), v.end());
  add_value(key, val);
}

void Writer::add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, const void* data,
                        size_t n_bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  add_tensor_bytes(name, type, ne, std::vector<uint8_t>(p, p + n_bytes));
}

void Writer::add_tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne,
                              std::vector<uint8_t> bytes) {
  for (const Tensor& t : tensors_) KVF_CHECK(t.name != name, "gguf writer: duplicate tensor '", name, "'");
  const int64_t rows = checked_rows(name, ne);
  // Types this build does not know are written as given, so tests can make files that hold them.
  if (ggml_block_bytes(type) != 0) {
    const size_t want = ggml_row_bytes(type, ne.empty() ? 1 : ne[0]) * (size_t)rows;
    KVF_CHECK(bytes.size() == want, "gguf writer: tensor '", name, "' (", ggml_type_name(type), ") needs ", want,
              " bytes, got ", bytes.size());
  }
  tensors_.push_back(Tensor{name, type, ne, std::move(bytes)});
}

void Writer::add_tensor_f32(const std::string& name, const std::vector<int64_t>& ne, const float* data,
                            GgmlType store_as) {
  const int64_t row_len = ne.empty() ? 1 : ne[0];
  const int64_t rows = checked_rows(name, ne);
  const size_t row_bytes = ggml_row_bytes(store_as, row_len);
  std::vector<uint8_t> bytes(row_bytes * (size_t)rows);
  // Rows are independent: converted side by side (a 7B model's 7.6 billion values took one core most of a minute).
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t r) {
    quantize_row(store_as, data + r * row_len, bytes.data() + r * row_bytes, row_len);
  });
  add_tensor_bytes(name, store_as, ne, std::move(bytes));  // moved, not copied: no second buffer per tensor
}

std::vector<uint8_t> Writer::encode() const {
  Buffer b;
  b.put<uint32_t>(kGgufMagic);
  b.put<uint32_t>(version_);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(kv_.size());
  for (const auto& [key, value] : kv_) {
    b.put_string(key);
    b.put<uint32_t>((uint32_t)value.type);
    b.put_value(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    b.put_string(t.name);
    b.put<uint32_t>((uint32_t)t.ne.size());
    for (int64_t n : t.ne) b.put<uint64_t>((uint64_t)n);
    b.put<uint32_t>((uint32_t)t.type);
    b.put<uint64_t>(offset);
    offset += align_up(t.bytes.size(), alignment_);
  }
  b.bytes.resize(align_up(b.bytes.size(), alignment_), 0);
  return std::move(b.bytes);
}

void Writer::write(const std::string& path) const {
  const std::vector<uint8_t> header = encode();
  PendingFile out(path);  // <path>.<pid>.tmp: never a name another process, or the user, may hold
  std::FILE* f = std::fopen(out.temp().c_str(), "wb");
  if (!f) fail(path, ": cannot create ", out.temp(), ": ", std::strerror(errno));
  const std::vector<uint8_t> zeros(alignment_, 0);
  const auto put = [f](const uint8_t* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, f) == n; };
  bool ok = put(header.data(), header.size());
  for (const Tensor& t : tensors_) {
    ok = ok && put(t.bytes.data(), t.bytes.size());
    ok = ok && put(zeros.data(), align_up(t.bytes.size(), alignment_) - t.bytes.size());
  }
  const int err = errno;
  close_stream_checked(f, out.temp());
  KVF_CHECK(ok, path, ": writing failed: ", std::strerror(err));
  out.commit();
}

}  // namespace kvf::gguf
