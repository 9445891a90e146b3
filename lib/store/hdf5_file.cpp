#include "store/hdf5_file.h"

#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "store/hdf5_zstd_filter.h"
#include "store/store_format.h"

namespace kvf::h5 {
namespace {

// A file whose H5Fclose failed (a full disk) stays in HDF5's tables, and HDF5 1.10's exit-time cleanup crashes
// closing it again. Every file is closed explicitly, so that cleanup has nothing to do: it is switched off
// before the first HDF5 call (H5dont_atexit must come first to take effect).
const bool kNoExitCleanup = H5dont_atexit() >= 0;

std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto* s = static_cast<std::string*>(out);
        if (s->empty() && e->desc) *s = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  for (char& c : reason)
    if (c == '\n' || c == '\r') c = ' ';  // HDF5's own messages may span lines; an error is one line
  return reason.empty() ? "unknown HDF5 error" : reason;
}

Handle utf8_string_type() {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

// Memory and little-endian file types of each supported element type.
template <typename T>
struct TypeOf;
template <>
struct TypeOf<int32_t> {
  static hid_t mem() { return H5T_NATIVE_INT32; }
  static hid_t file() { return H5T_STD_I32LE; }
  static constexpr H5T_class_t cls = H5T_INTEGER;
};
template <>
struct TypeOf<uint32_t> {
  static hid_t mem() { return H5T_NATIVE_UINT32; }
  static hid_t file() { return H5T_STD_U32LE; }
  static constexpr H5T_class_t cls = H5T_INTEGER;
};
template <>
struct TypeOf<int64_t> {
  static hid_t mem() { return H5T_NATIVE_INT64; }
  static hid_t file() { return H5T_STD_I64LE; }
  static constexpr H5T_class_t cls = H5T_INTEGER;
};
template <>
struct TypeOf<uint64_t> {
  static hid_t mem() { return H5T_NATIVE_UINT64; }
  static hid_t file() { return H5T_STD_U64LE; }
  static constexpr H5T_class_t cls = H5T_INTEGER;
};
template <>
struct TypeOf<double> {
  static hid_t mem() { return H5T_NATIVE_DOUBLE; }
  static hid_t file() { return H5T_IEEE_F64LE; }
  static constexpr H5T_class_t cls = H5T_FLOAT;
};
template <>
struct TypeOf<float> {
  static hid_t mem() { return H5T_NATIVE_FLOAT; }
  static hid_t file() { return H5T_IEEE_F32LE; }
  static constexpr H5T_class_t cls = H5T_FLOAT;
};

// Creation properties of a dataset or group with no modification time in its header, so that writing the same
// data twice gives the same bytes (a resumed run's file equals an uninterrupted run's).
Handle untimed_props(hid_t property_class) {
  Handle props(H5Pcreate(property_class), H5Pclose);
  H5Pset_obj_track_times(props.get(), false);
  return props;
}

Handle float16_type(size_t mant_bits, size_t exp_bits, size_t bias) {
  // Fields first (they fit the 32-bit type), then shrink to 2 bytes; the sign stays at bit 15.
  Handle type(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  H5Tset_fields(type.get(), 15, mant_bits, exp_bits, 0, mant_bits);
  H5Tset_size(type.get(), 2);
  H5Tset_ebias(type.get(), bias);
  return type;
}

// Elements of a shape a file declares, refused when their count or byte size does not fit 64 bits (a damaged
// file may declare anything; the wrapped product used to size the buffer).
uint64_t element_count(const std::vector<uint64_t>& shape, uint64_t element_bytes, const std::string& path,
                       const std::string& what) {
  uint64_t n = 1;
  for (const uint64_t d : shape) {
    KVF_CHECK(d == 0 || n <= UINT64_MAX / element_bytes / d, path, ": ", what, " declares extents whose product ",
              "overflows (a damaged file)");
    n *= d;
  }
  return n;
}

// An attribute a reader copies into one variable must hold exactly one value (a damaged file's array attribute
// used to be read past that variable).
Handle open_single_attribute(const File& file, const std::string& name, const std::string& what) {
  Handle attr(file.check(H5Aopen(file.id(), name.c_str(), H5P_DEFAULT), "missing " + what), H5Aclose);
  const Handle space(file.check(H5Aget_space(attr.get()), "cannot read the shape of " + what), H5Sclose);
  const hssize_t values = H5Sget_simple_extent_npoints(space.get());
  KVF_CHECK(values == 1, file.path(), ": ", what, " holds ", values, " values, expected one");
  return attr;
}

}  // namespace

Handle ieee_f16_type() { return float16_type(10, 5, 15); }
Handle bfloat16_type() { return float16_type(7, 8, 127); }

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

File::File(std::string path, hid_t id, const char* action)
    : path_(std::move(path)), file_(check(id, action), H5Fclose) {
  register_zstd_filter();  // before any dataset of the file is read or written
}

File File::create(const std::string& path) {
  const QuietErrors quiet;
  return File(path, H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "cannot create the file");
}

File File::open_read(const std::string& path) {
  const QuietErrors quiet;
  return File(path, H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "cannot open as HDF5");
}

File::~File() {
  if (file_.get() < 0) return;
  const QuietErrors quiet;  // an unwinding writer's failure is already reported; HDF5 must not print its stack
  H5Fclose(file_.release());
}

void File::close() {
  const QuietErrors quiet;
  check_status(H5Fclose(file_.release()), "cannot close the file (data not written)");
}

hid_t File::check(hid_t id, const std::string& what) const {
  if (id < 0) fail(path_, ": ", what, " (HDF5: ", hdf5_reason(), ")");
  return id;
}

void File::check_status(herr_t rc, const std::string& what) const {
  if (rc < 0) fail(path_, ": ", what, " (HDF5: ", hdf5_reason(), ")");
}

void File::write_string_attribute(const std::string& name, const std::string& value) const {
  const QuietErrors quiet;
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(check(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    "cannot create attribute " + name),
              H5Aclose);
  check_status(H5Awrite(attr.get(), type.get(), value.c_str()), "cannot write attribute " + name);
}

void File::write_int_attribute(const std::string& name, int64_t value) const {
  const QuietErrors quiet;
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(check(H5Acreate2(id(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    "cannot create attribute " + name),
              H5Aclose);
  check_status(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), "cannot write attribute " + name);
}

std::string File::read_string_attribute(const std::string& name) const {
  const QuietErrors quiet;
  const std::string what = "attribute '" + name + "'";
  const Handle attr = open_single_attribute(*this, name, what);
  Handle type(check(H5Aget_type(attr.get()), "cannot read the type of " + what), H5Tclose);
  KVF_CHECK(H5Tget_class(type.get()) == H5T_STRING && !H5Tis_variable_str(type.get()), path_, ": ", what,
            " is not a fixed-length string");
  const size_t size = H5Tget_size(type.get());
  std::string value(size, '\0');
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), size);
  check_status(H5Aread(attr.get(), mem.get(), value.data()), "cannot read " + what);
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

int64_t File::read_int_attribute(const std::string& name) const {
  const QuietErrors quiet;
  const std::string what = "attribute '" + name + "'";
  const Handle attr = open_single_attribute(*this, name, what);
  Handle type(check(H5Aget_type(attr.get()), "cannot read the type of " + what), H5Tclose);
  KVF_CHECK(H5Tget_class(type.get()) == H5T_INTEGER, path_, ": ", what, " is not an integer");
  int64_t value = 0;
  check_status(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), "cannot read " + what);
  return value;
}

void File::require_string_attribute(const std::string& name, const std::string& expected) const {
  const std::string value = read_string_attribute(name);
  KVF_CHECK(value == expected, path_, ": attribute '", name, "' is '", value, "', expected '", expected, "'");
}

void File::write_format(const std::string& magic, int64_t version) const {
  write_string_attribute("magic", magic);
  write_int_attribute("format_version", version);
}

int64_t File::read_format(const std::string& magic, int64_t current) const {
  require_string_attribute("magic", magic);
  return require_known_version(path_, "attribute 'format_version'", read_int_attribute("format_version"), current);
}

bool File::has(const std::string& name) const {
  const QuietErrors quiet;
  return H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
}

template <typename T>
void File::write(const std::string& name, const std::vector<uint64_t>& dims, const T* data) const {
  const QuietErrors quiet;
  std::vector<hsize_t> hd(dims.begin(), dims.end());
  Handle space(H5Screate_simple((int)hd.size(), hd.data(), nullptr), H5Sclose);
  const Handle props = untimed_props(H5P_DATASET_CREATE);
  Handle dset(check(H5Dcreate2(id(), name.c_str(), TypeOf<T>::file(), space.get(), H5P_DEFAULT, props.get(),
                               H5P_DEFAULT),
                    "cannot create dataset " + name),
              H5Dclose);
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  if (n > 0)
    check_status(H5Dwrite(dset.get(), TypeOf<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
                 "cannot write dataset " + name);
}

Handle File::open_dataset(const std::string& name, H5T_class_t type_class, std::vector<int64_t> dims,
                          std::vector<uint64_t>& actual) const {
  const QuietErrors quiet;
  const std::string what = "dataset '" + name + "'";
  Handle dset(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "missing " + what), H5Dclose);
  Handle type(check(H5Dget_type(dset.get()), "cannot read the type of " + what), H5Tclose);
  KVF_CHECK(H5Tget_class(type.get()) == type_class, path_, ": ", what, " has the wrong element type");
  KVF_CHECK(type_class != H5T_STRING || H5Tis_variable_str(type.get()) > 0, path_, ": ", what,
            " is not a variable-length string");
  Handle space(check(H5Dget_space(dset.get()), "cannot read the shape of " + what), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  KVF_CHECK(rank == (int)dims.size(), path_, ": ", what, " has ", rank, " dimensions, expected ", dims.size());
  std::vector<hsize_t> hd(rank);
  H5Sget_simple_extent_dims(space.get(), hd.data(), nullptr);
  actual.assign(hd.begin(), hd.end());
  for (int i = 0; i < rank; ++i)
    KVF_CHECK(dims[i] < 0 || actual[i] == (uint64_t)dims[i], path_, ": ", what, " has ", actual[i],
              " entries along dimension ", i, ", expected ", dims[i]);
  return dset;
}

template <typename T>
std::vector<T> File::read(const std::string& name, std::vector<int64_t> dims, std::vector<uint64_t>* actual) const {
  const QuietErrors quiet;
  std::vector<uint64_t> shape;
  const Handle dset = open_dataset(name, TypeOf<T>::cls, std::move(dims), shape);
  const uint64_t n = element_count(shape, sizeof(T), path_, "dataset '" + name + "'");
  std::vector<T> values(n);
  // HDF5 converts the stored type to T and fails on values out of T's range.
  if (n > 0)
    check_status(H5Dread(dset.get(), TypeOf<T>::mem(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 "cannot read dataset '" + name + "'");
  if (actual) *actual = shape;
  return values;
}

void File::write_raw(const std::string& name, hid_t type, const std::vector<uint64_t>& dims, const void* data,
                     uint64_t chunk_rows, Compression compression) const {
  const QuietErrors quiet;
  std::vector<hsize_t> hd(dims.begin(), dims.end());
  Handle space(H5Screate_simple((int)hd.size(), hd.data(), nullptr), H5Sclose);
  const Handle props = untimed_props(H5P_DATASET_CREATE);
  if (chunk_rows > 0 && !hd.empty()) {
    std::vector<hsize_t> chunk = hd;
    chunk[0] = std::min<hsize_t>(chunk_rows, hd[0]);  // HDF5 refuses chunks larger than a fixed dimension
    for (hsize_t& c : chunk) c = std::max<hsize_t>(c, 1);  // and zero-sized ones
    check_status(H5Pset_chunk(props.get(), (int)chunk.size(), chunk.data()), "cannot chunk dataset " + name);
    if (compression.codec != Compression::Codec::None)
      check_status(H5Pset_shuffle(props.get()), "cannot set shuffle on dataset " + name);
    if (compression.codec == Compression::Codec::Deflate)
      check_status(H5Pset_deflate(props.get(), (unsigned)compression.level), "cannot set deflate on dataset " + name);
    if (compression.codec == Compression::Codec::Zstd) {
      const unsigned level = (unsigned)compression.level;
      check_status(H5Pset_filter(props.get(), kZstdFilterId, H5Z_FLAG_MANDATORY, 1, &level),
                   "cannot set zstd on dataset " + name);
    }
  }
  Handle dset(check(H5Dcreate2(id(), name.c_str(), type, space.get(), H5P_DEFAULT, props.get(), H5P_DEFAULT),
                    "cannot create dataset " + name),
              H5Dclose);
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  if (n > 0)
    check_status(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "cannot write dataset " + name);
}

std::vector<uint64_t> File::raw_shape(const std::string& name, hid_t type) const {
  const QuietErrors quiet;
  const std::string what = "dataset '" + name + "'";
  Handle dset(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "missing " + what), H5Dclose);
  Handle stored(check(H5Dget_type(dset.get()), "cannot read the type of " + what), H5Tclose);
  KVF_CHECK(H5Tequal(stored.get(), type) > 0, path_, ": ", what, " has the wrong element type");
  Handle space(check(H5Dget_space(dset.get()), "cannot read the shape of " + what), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  KVF_CHECK(rank >= 0, path_, ": cannot read the rank of ", what);
  std::vector<hsize_t> hd(rank);
  H5Sget_simple_extent_dims(space.get(), hd.data(), nullptr);
  return {hd.begin(), hd.end()};
}

Compression File::compression(const std::string& name) const {
  const QuietErrors quiet;
  Handle dset(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "missing dataset '" + name + "'"), H5Dclose);
  Handle props(check(H5Dget_create_plist(dset.get()), "cannot read the properties of dataset '" + name + "'"),
               H5Pclose);
  const int filters = H5Pget_nfilters(props.get());
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, values[4] = {0, 0, 0, 0};
    size_t n_values = 4;
    char filter_name[64];
    const H5Z_filter_t filter = H5Pget_filter2(props.get(), (unsigned)i, &flags, &n_values, values,
                                               sizeof filter_name, filter_name, nullptr);
    const int level = n_values > 0 ? (int)values[0] : 0;
    if (filter == H5Z_FILTER_DEFLATE) return {Compression::Codec::Deflate, level};
    if (filter == kZstdFilterId) return {Compression::Codec::Zstd, level};
  }
  return {};
}

uint64_t File::stored_bytes(const std::string& name) const {
  const QuietErrors quiet;
  Handle dset(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "missing dataset '" + name + "'"), H5Dclose);
  return H5Dget_storage_size(dset.get());
}

void File::read_raw_rows(const std::string& name, hid_t type, uint64_t first, uint64_t count, void* out) const {
  const QuietErrors quiet;
  const std::string what = "dataset '" + name + "'";
  Handle dset(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "missing " + what), H5Dclose);
  Handle space(check(H5Dget_space(dset.get()), "cannot read the shape of " + what), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  KVF_CHECK(rank >= 1, path_, ": ", what, " has no rows");
  std::vector<hsize_t> start(rank, 0), block(rank);
  H5Sget_simple_extent_dims(space.get(), block.data(), nullptr);
  KVF_CHECK(first <= block[0] && count <= block[0] - first, path_, ": rows ", first, "..", first + count, " of ", what,
            " are outside its ", block[0], " rows");
  if (count == 0) return;
  start[0] = first;
  block[0] = count;
  check_status(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr),
               "cannot select rows of " + what);
  Handle mem(H5Screate_simple(rank, block.data(), nullptr), H5Sclose);
  check_status(H5Dread(dset.get(), type, mem.get(), space.get(), H5P_DEFAULT, out), "cannot read rows of " + what);
}

void File::create_group(const std::string& name) const {
  const QuietErrors quiet;
  const Handle props = untimed_props(H5P_GROUP_CREATE);
  Handle group(check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, props.get(), H5P_DEFAULT),
                     "cannot create group " + name),
               H5Gclose);
}

void File::write_strings(const std::string& name, const std::vector<const char*>& values) const {
  const QuietErrors quiet;
  const hsize_t dims[1] = {values.size()};
  const Handle type = utf8_string_type();
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  const Handle props = untimed_props(H5P_DATASET_CREATE);
  Handle dset(check(H5Dcreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, props.get(), H5P_DEFAULT),
                    "cannot create dataset " + name),
              H5Dclose);
  if (!values.empty())
    check_status(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 "cannot write dataset " + name);
}

std::vector<std::string> File::read_strings(const std::string& name, int64_t expected) const {
  const QuietErrors quiet;
  std::vector<uint64_t> shape;
  const Handle dset = open_dataset(name, H5T_STRING, {expected}, shape);
  std::vector<char*> pointers(shape[0], nullptr);
  std::vector<std::string> out(shape[0]);
  if (shape[0] == 0) return out;
  const Handle type = utf8_string_type();
  check_status(H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()),
               "cannot read dataset '" + name + "'");
  for (size_t i = 0; i < out.size(); ++i) out[i] = pointers[i] ? pointers[i] : "";
  Handle space(H5Dget_space(dset.get()), H5Sclose);
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
#else
  H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
#endif
  return out;
}

#define KVF_H5_INSTANTIATE(T)                                                                        \
  template void File::write<T>(const std::string&, const std::vector<uint64_t>&, const T*) const; \
  template std::vector<T> File::read<T>(const std::string&, std::vector<int64_t>, std::vector<uint64_t>*) const;
KVF_H5_INSTANTIATE(int32_t)
KVF_H5_INSTANTIATE(uint32_t)
KVF_H5_INSTANTIATE(int64_t)
KVF_H5_INSTANTIATE(uint64_t)
KVF_H5_INSTANTIATE(float)
KVF_H5_INSTANTIATE(double)
#undef KVF_H5_INSTANTIATE

}  // namespace kvf::h5
