#include "hdf5_edits.h"

#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "store/hdf5_file.h"

namespace kvf::fuzz {
namespace {

struct Object {
  std::string name;  // an attribute of the root group, or a dataset's path
  bool attribute = false;
};

std::vector<Object> objects_of(hid_t file) {
  std::vector<Object> objects;
  H5Aiterate2(
      file, H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
        static_cast<std::vector<Object>*>(out)->push_back({name, true});
        return 0;
      },
      &objects);
  H5Ovisit(
      file, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t, const char* name, const H5O_info_t* info, void* out) -> herr_t {
        if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<Object>*>(out)->push_back({name, false});
        return 0;
      },
      &objects);
  return objects;
}

// An element type the readers meet or must refuse.
h5::Handle element_type(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 9)) {
    case 0: return h5::Handle(H5Tcopy(H5T_STD_I8LE), H5Tclose);
    case 1: return h5::Handle(H5Tcopy(H5T_STD_U8LE), H5Tclose);
    case 2: return h5::Handle(H5Tcopy(H5T_STD_I32LE), H5Tclose);
    case 3: return h5::Handle(H5Tcopy(H5T_STD_U32LE), H5Tclose);
    case 4: return h5::Handle(H5Tcopy(H5T_STD_I64LE), H5Tclose);
    case 5: return h5::Handle(H5Tcopy(H5T_STD_U64LE), H5Tclose);
    case 6: return h5::Handle(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
    case 7: return h5::Handle(H5Tcopy(H5T_IEEE_F64LE), H5Tclose);
    case 8: return h5::ieee_f16_type();
    default: {
      h5::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(type.get(), in.ConsumeIntegralInRange<size_t>(1, 24));
      return type;
    }
  }
}

// A dataspace of rank 0 to 4, each extent 0 to 16.
h5::Handle dataspace(FuzzedDataProvider& in, size_t& elements) {
  const int rank = in.ConsumeIntegralInRange(0, 4);
  std::vector<hsize_t> dims(rank);
  elements = 1;
  for (hsize_t& d : dims) elements *= (d = in.ConsumeIntegralInRange<hsize_t>(0, 16));
  return rank == 0 ? h5::Handle(H5Screate(H5S_SCALAR), H5Sclose)
                   : h5::Handle(H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
}

std::vector<uint8_t> bytes(FuzzedDataProvider& in, size_t n) {
  std::vector<uint8_t> out = in.ConsumeBytes<uint8_t>(n);
  out.resize(n);
  return out;
}

void remove_object(hid_t file, const Object& o) {
  if (o.attribute) {
    H5Adelete(file, o.name.c_str());
  } else {
    H5Ldelete(file, o.name.c_str(), H5P_DEFAULT);
  }
}

// Another object under the same name: a new type, shape and content.
void replace(hid_t file, const Object& o, FuzzedDataProvider& in) {
  remove_object(file, o);
  const h5::Handle type = element_type(in);
  size_t elements = 0;
  const h5::Handle space = dataspace(in, elements);
  const std::vector<uint8_t> data = bytes(in, elements * H5Tget_size(type.get()));
  if (o.attribute) {
    const h5::Handle attr(H5Acreate2(file, o.name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                          H5Aclose);
    if (attr.get() >= 0 && elements > 0) H5Awrite(attr.get(), type.get(), data.data());
  } else {
    const h5::Handle set(H5Dcreate2(file, o.name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                    H5P_DEFAULT),
                         H5Dclose);
    if (set.get() >= 0 && elements > 0) H5Dwrite(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  }
}

// The same object with some of its bytes overwritten (numbers and fixed-length strings; variable-length strings
// are replaced instead, their bytes being pointers in memory).
void overwrite(hid_t file, const Object& o, FuzzedDataProvider& in) {
  const h5::Handle obj = o.attribute ? h5::Handle(H5Aopen(file, o.name.c_str(), H5P_DEFAULT), H5Aclose)
                                     : h5::Handle(H5Dopen2(file, o.name.c_str(), H5P_DEFAULT), H5Dclose);
  if (obj.get() < 0) return;
  const h5::Handle type(o.attribute ? H5Aget_type(obj.get()) : H5Dget_type(obj.get()), H5Tclose);
  if (H5Tis_variable_str(type.get()) > 0) return replace(file, o, in);
  const h5::Handle space(o.attribute ? H5Aget_space(obj.get()) : H5Dget_space(obj.get()), H5Sclose);
  const hssize_t elements = H5Sget_simple_extent_npoints(space.get());
  const size_t n = static_cast<size_t>(elements) * H5Tget_size(type.get());
  if (elements <= 0 || n == 0) return;
  std::vector<uint8_t> data(n);
  if ((o.attribute ? H5Aread(obj.get(), type.get(), data.data())
                   : H5Dread(obj.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data())) < 0)
    return;
  const size_t at = in.ConsumeIntegralInRange<size_t>(0, n - 1);
  const std::vector<uint8_t> patch = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(1, 8));
  for (size_t i = 0; i < patch.size() && at + i < n; ++i) data[at + i] = patch[i];
  if (o.attribute) {
    H5Awrite(obj.get(), type.get(), data.data());
  } else {
    H5Dwrite(obj.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
  }
}

}  // namespace

void write_edited_hdf5(const std::string& valid_file, const uint8_t* data, size_t size, const std::string& out_path) {
  // libFuzzer's timer signals can interrupt the copy (EINTR, seen once in 180,000 runs): copy again then.
  for (int attempt = 1;; ++attempt) {
    std::error_code ec;
    std::filesystem::copy_file(valid_file, out_path, std::filesystem::copy_options::overwrite_existing, ec);
    if (!ec) break;
    if (ec != std::errc::interrupted || attempt == 100)
      throw std::filesystem::filesystem_error("copying the valid file", valid_file, out_path, ec);
  }
  if (size == 0) return;
  FuzzedDataProvider in(data, size);
  const h5::QuietErrors quiet;
  const hid_t file = H5Fopen(out_path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) std::abort();  // the valid file the target wrote: no finding about the reader
  const std::vector<Object> objects = objects_of(file);
  for (int edit = 0; edit < 8 && in.remaining_bytes() > 0 && !objects.empty(); ++edit) {
    const Object& o = objects[in.ConsumeIntegralInRange<size_t>(0, objects.size() - 1)];
    switch (in.ConsumeIntegralInRange(0, 2)) {
      case 0: remove_object(file, o); break;
      case 1: replace(file, o, in); break;
      default: overwrite(file, o, in); break;
    }
  }
  if (H5Fclose(file) < 0) std::abort();
}

}  // namespace kvf::fuzz
