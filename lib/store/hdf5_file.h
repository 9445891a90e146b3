// A thin, checked layer over the HDF5 C API for the store's files: every failure becomes a kvf::Error naming the
// file, the object and HDF5's own reason; HDF5's automatic error printing is off inside every call (a scoped
// QuietErrors, so nested and interleaved Files restore it correctly). The Debian
// HDF5 is not thread-safe: use a File from one thread at a time.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "store/h5_compression.h"

namespace kvf::h5 {

// An HDF5 identifier closed by its own close function when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  hid_t release() {  // the caller closes it now
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Silences HDF5's error printing for its lifetime (HDF5 keeps this per library, so it is restored after).
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// 2-byte little-endian float types. HDF5 1.10 predefines no half type; this one is IEEE binary16 (h5py reads it as
// float16). bfloat16 is the top half of an IEEE f32 (8 exponent bits, 7 mantissa bits, bias 127); h5py has no
// bfloat16 and reads it converted to float32.
Handle ieee_f16_type();
Handle bfloat16_type();

class File {
 public:
  static File create(const std::string& path);  // truncates
  static File open_read(const std::string& path);
  File(File&&) = default;
  ~File();  // closes quietly; a writer calls close() to learn whether its data reached the file
  // Flushes and closes, throwing "<path>: cannot close ..." when HDF5 could not write what it held (a full disk).
  void close();

  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }
  hid_t check(hid_t id, const std::string& what) const;  // throws "<path>: <what> (HDF5: <reason>)" when id < 0
  void check_status(herr_t rc, const std::string& what) const;

  void write_string_attribute(const std::string& name, const std::string& value) const;
  void write_int_attribute(const std::string& name, int64_t value) const;
  std::string read_string_attribute(const std::string& name) const;
  int64_t read_int_attribute(const std::string& name) const;
  // Throws unless the attribute holds `expected`, naming both values.
  void require_string_attribute(const std::string& name, const std::string& expected) const;
  // Every store file starts with a "magic" string and a "format_version" integer; readers check both first.
  void write_format(const std::string& magic, int64_t version) const;
  // Checks the magic and returns the file's format version, once it is one this kvfuse reads (1..current,
  // store/store_format.h); a newer or unknown version is a kvf::Error naming the file and the version.
  int64_t read_format(const std::string& magic, int64_t current) const;

  // Numeric datasets, row-major, one or two dimensions. T: int32_t, uint32_t, int64_t, uint64_t, float.
  template <typename T>
  void write(const std::string& name, const std::vector<uint64_t>& dims, const T* data) const;
  // Reads a whole dataset; its dimensions must equal `dims`, where a -1 entry accepts any length there.
  template <typename T>
  std::vector<T> read(const std::string& name, std::vector<int64_t> dims, std::vector<uint64_t>* actual = nullptr) const;

  // Datasets of any rank in a caller-given element type, used as both memory and file type so that HDF5 converts
  // nothing (e.g. ieee_f16_type()). chunk_rows > 0 stores the dataset HDF5-chunked along dimension 0, in blocks of
  // that many rows (and all of every other dimension), compressed as `compression` says (only when chunked).
  void write_raw(const std::string& name, hid_t type, const std::vector<uint64_t>& dims, const void* data,
                 uint64_t chunk_rows = 0, Compression compression = {}) const;
  // The dimensions of a dataset whose element type must equal `type` exactly.
  std::vector<uint64_t> raw_shape(const std::string& name, hid_t type) const;
  // How a dataset was compressed (write_raw's compression); codec None when it is not.
  Compression compression(const std::string& name) const;
  // Bytes the dataset takes in the file (after compression), without the file's own metadata.
  uint64_t stored_bytes(const std::string& name) const;
  // Reads rows [first, first + count) along dimension 0 (a hyperslab: only those rows' chunks are read).
  void read_raw_rows(const std::string& name, hid_t type, uint64_t first, uint64_t count, void* out) const;

  void create_group(const std::string& name) const;
  void write_strings(const std::string& name, const std::vector<const char*>& values) const;  // UTF-8
  std::vector<std::string> read_strings(const std::string& name, int64_t expected) const;    // -1: any length
  bool has(const std::string& name) const;

 private:
  File(std::string path, hid_t id, const char* action);
  Handle open_dataset(const std::string& name, H5T_class_t type_class, std::vector<int64_t> dims,
                      std::vector<uint64_t>& actual) const;
  std::string path_;
  Handle file_;
};

}  // namespace kvf::h5
