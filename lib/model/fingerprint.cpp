#include "model/fingerprint.h"

#include <xxhash.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "io/gguf.h"

namespace kvf {
namespace {

// Everything hashed is first written into one byte string in a fixed little-endian layout, lengths before
// contents, so that no two different inputs serialize the same.
class Serializer {
 public:
  template <typename T>
  void put(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes_ += s;
  }
  void put_value(const gguf::Value& v) {
    put<uint32_t>((uint32_t)v.type);
    if (gguf::is_integer_type(v.type)) {
      put<int64_t>(v.i);
    } else if (gguf::is_float_type(v.type)) {
      put<double>(v.f);
    } else if (v.type == gguf::ValueType::STRING) {
      put_string(v.s);
    } else {  // ARRAY: exactly one of the element vectors is filled
      put<uint32_t>((uint32_t)v.elem_type);
      put<uint64_t>(v.array_size());
      for (int64_t x : v.ints) put<int64_t>(x);
      for (double x : v.floats) put<double>(x);
      for (const std::string& s : v.strings) put_string(s);
      for (const gguf::Value& e : v.array) put_value(e);
    }
  }
  // Every metadata entry whose key starts with one of the prefixes, in key order (the map is sorted).
  void put_metadata(const gguf::File& file, const std::vector<std::string>& prefixes) {
    for (const auto& [key, value] : file.metadata()) {
      for (const std::string& prefix : prefixes) {
        if (key.compare(0, prefix.size(), prefix) == 0) {
          put_string(key);
          put_value(value);
          break;
        }
      }
    }
  }
  uint64_t digest() const { return XXH3_64bits(bytes_.data(), bytes_.size()); }

 private:
  std::string bytes_;
};

}  // namespace

uint64_t model_fingerprint(const gguf::File& file) {
  Serializer s;
  const std::string arch = file.get_string("general.architecture");
  s.put_metadata(file, {"general.architecture", arch + ".", "tokenizer."});
  s.put<uint64_t>(file.tensors().size());
  for (const gguf::TensorInfo& t : file.tensors()) {
    s.put_string(t.name);
    s.put<uint32_t>((uint32_t)t.type);
    s.put<uint64_t>(t.ne.size());
    for (int64_t n : t.ne) s.put<int64_t>(n);
    // Each tensor's bytes are hashed on their own and the hash joins the serialization: one pass over the data.
    s.put<uint64_t>(XXH3_64bits(file.tensor_data(t), t.n_bytes));
  }
  return s.digest();
}

uint64_t tokenizer_fingerprint(const gguf::File& file) {
  Serializer s;
  s.put_metadata(file, {"tokenizer."});
  return s.digest();
}

}  // namespace kvf
