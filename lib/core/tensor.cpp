#include "core/tensor.h"

#include <sstream>

namespace kvf {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  KVF_CHECK(!shape.empty() && begin >= 0 && count >= 0 && begin + count <= shape[0], "tensor rows [", begin,
            ", ", begin + count, ") out of range for shape ", shape_str(shape));
  Tensor t = *this;
  t.offset += dtype_bytes(dtype, begin * row_elems());
  t.shape[0] = count;
  return t;
}

Tensor Tensor::reshaped(Shape new_shape) const {
  Tensor t = *this;
  t.shape = std::move(new_shape);
  KVF_CHECK(t.numel() == numel(), "cannot reshape ", shape_str(shape), " to ", shape_str(t.shape));
  return t;
}

}  // namespace kvf
