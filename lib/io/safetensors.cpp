#include "io/safetensors.h"

#include <cstring>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/half.h"
#include "core/json_file.h"

namespace kvf::safetensors {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the reference implementation's limit

struct DtypeInfo {
  Dtype dtype;
  const char* name;
  size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1},       {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1},
    {Dtype::I16, "I16", 2},         {Dtype::U16, "U16", 2}, {Dtype::F16, "F16", 2}, {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},         {Dtype::U32, "U32", 4}, {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},         {Dtype::I64, "I64", 8}, {Dtype::U64, "U64", 8},
};

const DtypeInfo& info_of(Dtype t) {
  for (const DtypeInfo& d : kDtypes)
    if (d.dtype == t) return d;
  fail("safetensors: unknown dtype ", (int)t);
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Everything that can go wrong in one header entry, named after the file and the tensor.
TensorInfo parse_entry(const std::string& path, const std::string& name, const nlohmann::ordered_json& e,
                       uint64_t data_bytes) {
  const auto bad = [&](const auto&... what) { fail(path, ": tensor '", name, "': ", what...); };
  if (!e.is_object()) bad("header entry is not an object");
  TensorInfo t;
  t.name = name;
  const auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) bad("missing dtype");
  const std::string dname = dt->get<std::string>();
  const DtypeInfo* found = nullptr;
  for (const DtypeInfo& d : kDtypes)
    if (dname == d.name) found = &d;
  if (!found) bad("unknown dtype '", dname, "'");
  t.dtype = found->dtype;

  const auto shape = e.find("shape");
  if (shape == e.end() || !shape->is_array()) bad("missing shape");
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned()) bad("shape ", shape->dump(), " has a non-integer or negative dimension");
    const uint64_t v = d.get<uint64_t>();
    // Beyond the data section's size the product cannot match the byte range: stop before it overflows.
    if (v != 0 && numel > data_bytes / v) bad("shape ", shape->dump(), " is larger than the file");
    numel *= v;
    t.shape.push_back((int64_t)v);
  }

  const auto offsets = e.find("data_offsets");
  if (offsets == e.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    bad("data_offsets must be two non-negative integers");
  t.begin = (*offsets)[0].get<uint64_t>();
  t.end = (*offsets)[1].get<uint64_t>();
  if (t.begin > t.end || t.end > data_bytes)
    bad("data_offsets [", t.begin, ", ", t.end, "] outside the data section of ", data_bytes, " bytes");
  if (t.end - t.begin != numel * found->size)
    bad(dname, " ", shape->dump(), " needs ", numel * found->size, " bytes, data_offsets give ", t.end - t.begin);
  return t;
}

}  // namespace

const char* dtype_name(Dtype t) { return info_of(t).name; }
size_t dtype_size(Dtype t) { return info_of(t).size; }

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::shared_ptr<const File> File::open(const std::string& path) {
  std::shared_ptr<File> f(new File());
  f->path_ = path;
  f->mapping_ = MappedFile(path);
  f->parse_header();
  return f;
}

File::~File() = default;

void File::parse_header() {
  KVF_CHECK(mapping_.size() >= 8, path_, ": ", mapping_.size(), " bytes is too short for a safetensors file");
  const uint64_t n = read_u64_le(mapping_.data());
  // A length the file cannot hold is not shown: those 8 bytes may be anything (a link can point at any file), and
  // a message never quotes a file's bytes.
  KVF_CHECK(n <= mapping_.size() - 8, path_, ": header length field does not fit the file's size (",
            mapping_.size(), " bytes): not a safetensors file");
  KVF_CHECK(n <= kMaxHeaderBytes, path_, ": header length ", n, " is above the safetensors limit of ",
            kMaxHeaderBytes, " bytes");
  data_offset_ = 8 + n;
  const uint64_t data_bytes = mapping_.size() - data_offset_;
  nlohmann::ordered_json header;
  // The parser keeps one of two equal keys silently; a tensor named twice is ambiguous, so it is caught here.
  std::string duplicate;
  std::set<std::string> names;
  using Event = nlohmann::ordered_json::parse_event_t;
  const auto note_key = [&](int depth, Event event, nlohmann::ordered_json& key) {
    if (depth == 1 && event == Event::key && !names.insert(key.get<std::string>()).second)
      duplicate = key.get<std::string>();
    return true;
  };
  try {
    header = nlohmann::ordered_json::parse(mapping_.data() + 8, mapping_.data() + data_offset_, note_key);
  } catch (const nlohmann::json::exception& e) {
    fail(path_, ": header is not valid JSON: ", json_error_text(e));
  }
  KVF_CHECK(header.is_object(), path_, ": header is not a JSON object");
  KVF_CHECK(duplicate.empty(), path_, ": tensor '", duplicate, "' appears twice");
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      KVF_CHECK(entry.is_object(), path_, ": __metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        KVF_CHECK(value.is_string(), path_, ": __metadata__ '", key, "' is not a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    index_[name] = tensors_.size();
    tensors_.push_back(parse_entry(path_, name, entry, data_bytes));
  }
}

const TensorInfo* File::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) fail(path_, ": no tensor '", name, "'");
  return *t;
}

const uint8_t* File::data(const TensorInfo& info) const { return mapping_.data() + data_offset_ + info.begin; }

std::vector<float> File::to_f32(const TensorInfo& info) const {
  const size_t n = (size_t)info.numel();
  std::vector<float> out(n);
  const uint8_t* p = data(info);
  // Element by element through memcpy: the data section carries no alignment guarantee.
  switch (info.dtype) {
    case Dtype::F32:
      if (n) std::memcpy(out.data(), p, n * 4);
      break;
    case Dtype::F64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + i * 8, 8);
        out[i] = (float)d;
      }
      break;
    case Dtype::F16:
    case Dtype::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        out[i] = info.dtype == Dtype::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    default:
      fail(path_, ": tensor '", info.name, "' is ", dtype_name(info.dtype), ", not a float type");
  }
  return out;
}

}  // namespace kvf::safetensors
