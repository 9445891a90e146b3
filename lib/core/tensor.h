// A tensor is a typed, shaped window into backend-owned storage. The storage may live on a device: only the
// backend that made it dereferences data(); everyone else moves bytes through Backend::copy_{to,from}_host.
#pragma once
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace kvf {

enum class Device : uint8_t { Host, Cuda };

class Storage {
 public:
  virtual ~Storage() = default;
  virtual Device device() const = 0;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 protected:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);

struct Tensor {
  std::shared_ptr<Storage> storage;
  size_t offset = 0;  // bytes from storage->data()
  DType dtype = DType::F32;
  Shape shape;

  bool defined() const { return storage != nullptr; }
  int64_t dim(size_t i) const { return shape.at(i); }
  int64_t numel() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  // Block formats: numel and row_elems count values; a row holds whole blocks.
  size_t nbytes() const { return dtype_bytes(dtype, numel()); }
  // Elements per row along dimension 0 (well defined for zero rows too).
  int64_t row_elems() const {
    return shape.empty() ? 0
                         : std::accumulate(shape.begin() + 1, shape.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  Device device() const { return storage->device(); }

  // Raw pointer into the storage; a device pointer when the storage is on a device.
  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(static_cast<char*>(storage->data()) + offset);
  }

  // Rows [begin, begin+count) along dimension 0, sharing storage.
  Tensor rows(int64_t begin, int64_t count) const;
  // Same storage seen with another shape of equal element count.
  Tensor reshaped(Shape new_shape) const;
};

}  // namespace kvf
