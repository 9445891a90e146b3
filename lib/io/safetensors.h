// safetensors reader: an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and
// byte range, then the data. The file is memory-mapped; the header and every range are checked at open, so a
// malformed file raises kvf::Error naming the file (and the tensor), never a crash or a read past the end.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"

namespace kvf::safetensors {

enum class Dtype : uint8_t { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };
const char* dtype_name(Dtype t);  // as the header spells it: "F32", "BF16", ...
size_t dtype_size(Dtype t);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte range within the data section
  uint64_t end = 0;
  int64_t numel() const;
};

class File {
 public:
  // Maps and parses the file; throws kvf::Error("<path>: ...") on any problem.
  static std::shared_ptr<const File> open(const std::string& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in header order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  const TensorInfo* find(const std::string& name) const;  // nullptr if absent
  const TensorInfo& tensor(const std::string& name) const;  // throws naming the tensor and the file
  // The tensor's bytes (end - begin long, not necessarily aligned).
  const uint8_t* data(const TensorInfo& info) const;
  // The tensor converted to f32 (from F32, F16, BF16 or F64); throws naming the tensor and its dtype otherwise.
  std::vector<float> to_f32(const TensorInfo& info) const;

 private:
  File() = default;
  void parse_header();
  std::string path_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  MappedFile mapping_;
  uint64_t data_offset_ = 0;
};

}  // namespace kvf::safetensors
