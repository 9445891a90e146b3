// Element types of tensors that live in backend memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvf {

enum class DType : uint8_t { F32, F16, BF16, I8, I32 };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I8: return 1;
    case DType::I32: return 4;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "int8";
    case DType::I32: return "i32";
  }
  return "?";
}

}  // namespace kvf
