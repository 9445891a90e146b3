#include "io/gguf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace kvf::gguf {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF fields are read and written as host integers");

namespace {

constexpr uint32_t kMaxDims = 4;

// Smallest encoding of one value of type t, used to reject counts the rest of the file cannot hold before
// anything is allocated for them.
uint64_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::STRING:
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    case ValueType::ARRAY: return 4 + 8;
  }
  return 1;
}

bool known_value_type(uint32_t t) { return t <= (uint32_t)ValueType::F64; }

// Keys and names from a corrupt file can hold any bytes and be long: messages show them escaped and capped.
std::string printable(const std::string& s) {
  constexpr size_t kMaxShown = 80;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto c = (unsigned char)s[i];
    if (c >= 0x20 && c != 0x7f && c != '\\') {
      out += (char)c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out;
}

std::string describe_type(const Value& v) {
  if (v.type != ValueType::ARRAY) return value_type_name(v.type);
  return std::string("ARRAY of ") + value_type_name(v.elem_type);
}

}  // namespace

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::BOOL: return true;
    default: return false;
  }
}

bool is_float_type(ValueType t) { return t == ValueType::F32 || t == ValueType::F64; }

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "UINT8";
    case ValueType::I8: return "INT8";
    case ValueType::U16: return "UINT16";
    case ValueType::I16: return "INT16";
    case ValueType::U32: return "UINT32";
    case ValueType::I32: return "INT32";
    case ValueType::F32: return "FLOAT32";
    case ValueType::BOOL: return "BOOL";
    case ValueType::STRING: return "STRING";
    case ValueType::ARRAY: return "ARRAY";
    case ValueType::U64: return "UINT64";
    case ValueType::I64: return "INT64";
    case ValueType::F64: return "FLOAT64";
  }
  return "unknown";
}

size_t Value::array_size() const {
  if (type != ValueType::ARRAY) return 0;
  if (elem_type == ValueType::STRING) return strings.size();
  if (elem_type == ValueType::ARRAY) return array.size();
  if (is_float_type(elem_type)) return floats.size();
  return ints.size();
}

int64_t TensorInfo::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];
  return r;
}

// Reads the header, metadata and tensor infos of a mapped file into a File, checking every byte it touches.
class Parser {
 public:
  explicit Parser(File& f) : f_(f), p_(f.mapping_.data()), size_(f.mapping_.size()) {}

  void run() {
    read_header();
    for (uint64_t i = 0; i < n_kv_; ++i) read_kv(i);
    read_alignment();
    for (uint64_t i = 0; i < n_tensors_; ++i) read_tensor_info(i);
    f_.data_offset_ = align_up(pos_, f_.alignment_);
    check_tensor_ranges();
  }

 private:
  template <typename... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    fail(f_.path_, ": ", parts...);
  }

  uint64_t remaining() const { return size_ - pos_; }

  // `what` names the field for error messages: a string literal, or a callable that builds the name, so that
  // reading the 100k-entry vocabulary arrays builds no strings unless something is wrong.
  static std::string text(const char* what) { return what; }
  template <typename Describe>
  static std::string text(const Describe& what) {
    return what();
  }

  template <typename What>
  void need(uint64_t n, const What& what) const {
    if (n > remaining())
      error("truncated: ", text(what), " needs ", n, " bytes at offset ", pos_, " but the file ends at ", size_);
  }

  template <typename T, typename What>
  T read(const What& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  template <typename What>
  std::string read_string(const What& what) {
    const uint64_t len = read<uint64_t>([&] { return text(what) + " length"; });
    if (len > remaining())
      error(text(what), ": string length ", len, " at offset ", pos_ - 8, " exceeds the ", remaining(),
            " bytes left in the file");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), (size_t)len);
    pos_ += len;
    return s;
  }

  void read_header() {
    need(4 + 4 + 8 + 8, "GGUF header");
    const uint32_t magic = read<uint32_t>("magic");
    // The bytes found are not shown: they may be anything (a link can point at any file), and a message never
    // quotes a file's bytes.
    if (magic != kGgufMagic) error("not a GGUF file (it does not begin with \"GGUF\")");
    f_.version_ = read<uint32_t>("version");
    // A big-endian file shows its small version number byte-swapped.
    if (f_.version_ > 0xffff && (f_.version_ & 0xffff) == 0)
      error("big-endian GGUF (version field ", f_.version_, ") is not supported");
    if (f_.version_ == 1) error("GGUF version 1 is not supported (only versions 2 and 3); re-convert the model");
    if (f_.version_ != 2 && f_.version_ != 3)
      error("unsupported GGUF version ", f_.version_, " (only versions 2 and 3)");
    n_tensors_ = read<uint64_t>("tensor count");
    n_kv_ = read<uint64_t>("metadata count");
    // Every key-value takes at least 8 (key length) + 4 (type) + 1 bytes, every tensor info 8 + 4 + 4 + 8.
    if (n_kv_ > remaining() / 13) error("metadata count ", n_kv_, " cannot fit in the ", remaining(), " bytes left");
    if (n_tensors_ > remaining() / 24)
      error("tensor count ", n_tensors_, " cannot fit in the ", remaining(), " bytes left");
  }

  // Below, `key` is the key as shown in messages (see printable()).
  void read_kv(uint64_t index) {
    std::string key = read_string([&] { return "metadata entry #" + std::to_string(index) + " key"; });
    const std::string shown = printable(key);
    const uint32_t type = read<uint32_t>([&] { return "type of metadata '" + shown + "'"; });
    Value v = read_value(type, shown, 0);
    if (!f_.kv_.emplace(std::move(key), std::move(v)).second) error("duplicate metadata key '", shown, "'");
  }

  Value read_value(uint32_t raw_type, const std::string& key, int depth) {
    if (!known_value_type(raw_type)) error("metadata '", key, "': unknown value type ", raw_type);
    Value v;
    v.type = (ValueType)raw_type;
    if (v.type == ValueType::ARRAY) {
      read_array(v, key, depth);
    } else {
      read_scalar(v.type, key, v.i, v.f, v.s);
    }
    return v;
  }

  // Reads one scalar of type t into the slot its type uses.
  void read_scalar(ValueType t, const std::string& key, int64_t& i, double& f, std::string& s) {
    const auto what = [&] { return "value of '" + key + "'"; };
    switch (t) {
      case ValueType::U8: i = read<uint8_t>(what); break;
      case ValueType::I8: i = read<int8_t>(what); break;
      case ValueType::U16: i = read<uint16_t>(what); break;
      case ValueType::I16: i = read<int16_t>(what); break;
      case ValueType::U32: i = read<uint32_t>(what); break;
      case ValueType::I32: i = read<int32_t>(what); break;
      case ValueType::I64: i = read<int64_t>(what); break;
      case ValueType::F32: f = read<float>(what); break;
      case ValueType::F64: f = read<double>(what); break;
      case ValueType::STRING: s = read_string(what); break;
      case ValueType::U64: {
        const uint64_t u = read<uint64_t>(what);
        if (u > (uint64_t)INT64_MAX) error("metadata '", key, "': UINT64 value ", u, " is above INT64_MAX");
        i = (int64_t)u;
        break;
      }
      case ValueType::BOOL: {
        const uint8_t b = read<uint8_t>(what);
        if (b > 1) error("metadata '", key, "': BOOL byte is ", (int)b, ", expected 0 or 1");
        i = b;
        break;
      }
      case ValueType::ARRAY: error("metadata '", key, "': internal: array read as scalar");
    }
  }

  void read_array(Value& v, const std::string& key, int depth) {
    if (depth >= kMaxArrayDepth) error("metadata '", key, "': arrays nested deeper than ", kMaxArrayDepth);
    const uint32_t elem = read<uint32_t>([&] { return "element type of '" + key + "'"; });
    if (!known_value_type(elem)) error("metadata '", key, "': unknown array element type ", elem);
    v.elem_type = (ValueType)elem;
    const uint64_t count = read<uint64_t>([&] { return "element count of '" + key + "'"; });
    if (count > remaining() / min_encoded_size(v.elem_type))
      error("metadata '", key, "': array of ", count, " ", value_type_name(v.elem_type), " cannot fit in the ",
            remaining(), " bytes left");
    int64_t i = 0;
    double f = 0;
    std::string s;
    if (v.elem_type == ValueType::ARRAY) {
      v.array.reserve(count);
      for (uint64_t k = 0; k < count; ++k) v.array.push_back(read_value(elem, key, depth + 1));
    } else if (v.elem_type == ValueType::STRING) {
      v.strings.reserve(count);
      for (uint64_t k = 0; k < count; ++k)
        v.strings.push_back(read_string([&] { return "element " + std::to_string(k) + " of '" + key + "'"; }));
    } else if (is_float_type(v.elem_type)) {
      v.floats.reserve(count);
      for (uint64_t k = 0; k < count; ++k) {
        read_scalar(v.elem_type, key, i, f, s);
        v.floats.push_back(f);
      }
    } else {
      v.ints.reserve(count);
      for (uint64_t k = 0; k < count; ++k) {
        read_scalar(v.elem_type, key, i, f, s);
        v.ints.push_back(i);
      }
    }
  }

  void read_alignment() {
    auto it = f_.kv_.find("general.alignment");
    if (it == f_.kv_.end()) return;
    const Value& v = it->second;
    if (!is_integer_type(v.type) || v.type == ValueType::BOOL)
      error("general.alignment is ", describe_type(v), ", expected an unsigned integer");
    if (v.i <= 0 || (v.i & (v.i - 1)) != 0) error("general.alignment ", v.i, " is not a positive power of two");
    f_.alignment_ = (uint64_t)v.i;
  }

  void read_tensor_info(uint64_t index) {
    TensorInfo t;
    t.name = read_string([&] { return "name of tensor #" + std::to_string(index); });
    const std::string what = "tensor '" + printable(t.name) + "'";
    const uint32_t n_dims = read<uint32_t>([&] { return "dimension count of " + what; });
    if (n_dims > kMaxDims) error(what, ": ", n_dims, " dimensions (at most ", kMaxDims, ")");
    // The product skips zero dimensions so that rows() cannot overflow either when some dimension is 0.
    uint64_t n_elements = 1, nonzero_product = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = read<uint64_t>([&] { return "shape of " + what; });
      if (ne > (uint64_t)INT64_MAX) error(what, ": dimension ", d, " is ", ne, ", above INT64_MAX");
      if (ne != 0 && nonzero_product > (uint64_t)INT64_MAX / ne)
        error(what, ": element count overflows (dimension ", d, " is ", ne, ")");
      nonzero_product *= std::max<uint64_t>(ne, 1);
      n_elements *= ne;
      t.ne.push_back((int64_t)ne);
    }
    t.n_elements = n_elements;
    t.type = (GgmlType)read<uint32_t>([&] { return "type of " + what; });
    t.offset = read<uint64_t>([&] { return "data offset of " + what; });
    // Unknown types are kept (n_bytes stays 0): the file may still be useful for its other tensors.
    if (ggml_block_bytes(t.type) != 0) {
      const int64_t row = t.ne.empty() ? 1 : t.ne[0];
      const int64_t block = ggml_block_elems(t.type);
      if (row % block != 0)
        error(what, ": row length ", row, " is not a multiple of the ", ggml_type_name(t.type), " block size ", block);
      const uint64_t blocks = n_elements / (uint64_t)block;
      const uint64_t bytes = ggml_block_bytes(t.type);
      if (blocks > UINT64_MAX / bytes) error(what, ": byte size overflows (", n_elements, " elements)");
      t.n_bytes = blocks * bytes;
    }
    if (!f_.tensor_index_.emplace(t.name, f_.tensors_.size()).second)
      error("duplicate tensor name '", printable(t.name), "'");
    f_.tensors_.push_back(std::move(t));
  }

  uint64_t align_up(uint64_t x, uint64_t a) const { return (x + a - 1) / a * a; }

  void check_tensor_ranges() {
    const uint64_t data_size = size_ > f_.data_offset_ ? size_ - f_.data_offset_ : 0;
    for (const TensorInfo& t : f_.tensors_) {
      if (t.offset % f_.alignment_ != 0)
        error("tensor '", printable(t.name), "': data offset ", t.offset, " is not a multiple of the alignment ",
              f_.alignment_);
      if (t.n_bytes > data_size || t.offset > data_size - t.n_bytes)
        error("tensor '", printable(t.name), "': data [", t.offset, ", +", t.n_bytes,
              ") runs past the end of the data section (", data_size, " bytes from offset ", f_.data_offset_, ")");
    }
    std::vector<const TensorInfo*> by_offset;
    for (const TensorInfo& t : f_.tensors_) {
      if (t.n_bytes > 0) by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo& a = *by_offset[i - 1];
      const TensorInfo& b = *by_offset[i];
      if (a.offset + a.n_bytes > b.offset)
        error("tensors '", printable(a.name), "' [", a.offset, ", +", a.n_bytes, ") and '", printable(b.name), "' [",
              b.offset, ", ...) overlap");
    }
  }

  File& f_;
  const uint8_t* p_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t n_tensors_ = 0;
};

std::shared_ptr<const File> File::open(const std::string& path) {
  std::shared_ptr<File> f(new File());
  f->path_ = path;
  f->mapping_ = MappedFile(path);
  Parser(*f).run();
  return f;
}

Value string_value(std::string s) {
  Value v;
  v.type = ValueType::STRING;
  v.s = std::move(s);
  return v;
}

Value int_value(int64_t i, ValueType type) {
  Value v;
  v.type = type;
  v.i = i;
  return v;
}

Value float_value(double f) {
  Value v;
  v.type = ValueType::F32;
  v.f = (double)(float)f;
  return v;
}

Value bool_value(bool b) { return int_value(b ? 1 : 0, ValueType::BOOL); }

Value string_array_value(std::vector<std::string> strings) {
  Value v;
  v.type = ValueType::ARRAY;
  v.elem_type = ValueType::STRING;
  v.strings = std::move(strings);
  return v;
}

Value int_array_value(std::vector<int64_t> ints, ValueType elem_type) {
  Value v;
  v.type = ValueType::ARRAY;
  v.elem_type = elem_type;
  v.ints = std::move(ints);
  return v;
}

std::shared_ptr<const File> File::assemble(Parts parts) {
  KVF_CHECK(parts.data.size() == parts.tensors.size(), parts.path, ": ", parts.tensors.size(), " tensors but ",
            parts.data.size(), " data pointers");
  std::shared_ptr<File> f(new File());
  f->path_ = std::move(parts.path);
  f->kv_ = std::move(parts.metadata);
  f->tensors_ = std::move(parts.tensors);
  for (size_t i = 0; i < f->tensors_.size(); ++i) {
    const TensorInfo& t = f->tensors_[i];
    KVF_CHECK(f->tensor_index_.emplace(t.name, i).second, f->path_, ": tensor '", t.name, "' appears twice");
    KVF_CHECK(parts.data[i] || t.n_bytes == 0, f->path_, ": tensor '", t.name, "' has no data");
  }
  f->assembled_data_ = std::move(parts.data);
  f->storage_ = std::move(parts.storage);
  return f;
}

File::~File() = default;

const Value& File::get(const std::string& key) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) fail(path_, ": missing metadata key '", key, "'");
  return it->second;
}

namespace {
[[noreturn]] void wrong_type(const std::string& path, const std::string& key, const Value& v, const char* want) {
  fail(path, ": metadata '", key, "' is ", describe_type(v), ", expected ", want);
}
}  // namespace

std::string File::get_string(const std::string& key) const {
  const Value& v = get(key);
  if (v.type != ValueType::STRING) wrong_type(path_, key, v, "STRING");
  return v.s;
}

int64_t File::get_int(const std::string& key) const {
  const Value& v = get(key);
  if (!is_integer_type(v.type)) wrong_type(path_, key, v, "an integer");
  return v.i;
}

double File::get_float(const std::string& key) const {
  const Value& v = get(key);
  if (is_float_type(v.type)) return v.f;
  if (is_integer_type(v.type) && v.type != ValueType::BOOL) return (double)v.i;
  wrong_type(path_, key, v, "a number");
}

bool File::get_bool(const std::string& key) const {
  const Value& v = get(key);
  if (v.type != ValueType::BOOL) wrong_type(path_, key, v, "BOOL");
  return v.i != 0;
}

std::vector<std::string> File::get_string_array(const std::string& key) const {
  const Value& v = get(key);
  if (v.type != ValueType::ARRAY || v.elem_type != ValueType::STRING) wrong_type(path_, key, v, "ARRAY of STRING");
  return v.strings;
}

std::vector<int64_t> File::get_int_array(const std::string& key) const {
  const Value& v = get(key);
  if (v.type != ValueType::ARRAY || !is_integer_type(v.elem_type)) wrong_type(path_, key, v, "an ARRAY of integers");
  return v.ints;
}

std::vector<double> File::get_float_array(const std::string& key) const {
  const Value& v = get(key);
  if (v.type == ValueType::ARRAY && is_float_type(v.elem_type)) return v.floats;
  if (v.type == ValueType::ARRAY && is_integer_type(v.elem_type) && v.elem_type != ValueType::BOOL)
    return std::vector<double>(v.ints.begin(), v.ints.end());
  wrong_type(path_, key, v, "an ARRAY of numbers");
}

std::string File::get_string(const std::string& key, const std::string& dflt) const {
  return has(key) ? get_string(key) : dflt;
}
int64_t File::get_int(const std::string& key, int64_t dflt) const { return has(key) ? get_int(key) : dflt; }
double File::get_float(const std::string& key, double dflt) const { return has(key) ? get_float(key) : dflt; }
bool File::get_bool(const std::string& key, bool dflt) const { return has(key) ? get_bool(key) : dflt; }

const TensorInfo* File::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(const std::string& name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) fail(path_, ": no tensor named '", name, "'");
  return *t;
}

const uint8_t* File::tensor_data(const TensorInfo& info) const {
  if (!assembled_data_.empty()) return assembled_data_[tensor_index_.at(info.name)];
  // Only an empty tensor can start past the mapping (a file with no data section); it has no bytes to point at.
  return data_offset_ + info.offset < mapping_.size() ? mapping_.data() + data_offset_ + info.offset : nullptr;
}

void File::dequantize_rows(const TensorInfo& info, int64_t first_row, int64_t n_rows, float* dst) const {
  if (!ggml_type_supported(info.type))
    fail(path_, ": tensor '", info.name, "': converting ", ggml_type_name(info.type), " to f32 is not supported");
  const int64_t rows = info.rows();
  if (first_row < 0 || n_rows < 0 || first_row > rows || n_rows > rows - first_row)
    fail(path_, ": tensor '", info.name, "': rows [", first_row, ", +", n_rows, ") out of range (", rows, " rows)");
  const int64_t row_len = info.ne.empty() ? 1 : info.ne[0];
  if (row_len == 0) return;  // rows of nothing: a corrupt file may claim billions of them
  const size_t row_bytes = ggml_row_bytes(info.type, row_len);
  const uint8_t* src = tensor_data(info) + (size_t)first_row * row_bytes;
  for (int64_t r = 0; r < n_rows; ++r)
    dequantize_row(info.type, src + (size_t)r * row_bytes, dst + r * row_len, row_len);
}

}  // namespace kvf::gguf
