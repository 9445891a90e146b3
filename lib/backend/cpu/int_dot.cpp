#include "backend/cpu/int_dot.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/interleaved_weights.h"
#include "core/error.h"

namespace kvf::cpu {

void quantize_rows_int8(const float* x, int64_t rows, int64_t k, Int16Rows& out) {
  KVF_CHECK(k % 32 == 0, "8-bit activation rows: ", k, " values is not a multiple of 32");
  out.rows = rows;
  out.k = k;
  out.q8.resize((size_t)(rows * k));
  out.d8.resize((size_t)(rows * k / 32));
  out.sum8.resize((size_t)(rows * k / 32));
  if (cpu_kernels().avx2) {
    for (int64_t r = 0; r < rows; ++r)
      quantize_row_int8_avx2(x + r * k, k, out.q8.data() + r * k, out.d8.data() + r * (k / 32),
                             out.sum8.data() + r * (k / 32));
    return;
  }
  for (int64_t b = 0; b < rows * k / 32; ++b) {
    const float* v = x + b * 32;
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(v[i]));
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    int8_t* q = out.q8.data() + b * 32;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      q[i] = (int8_t)std::lrint(v[i] * inv);
      sum += q[i];
    }
    out.d8[(size_t)b] = amax / 127.0f;
    out.sum8[(size_t)b] = out.d8[(size_t)b] * (float)sum;
  }
}

void quantize_rows_int16(const float* x, int64_t rows, int64_t k, Int16Rows& out) {
  KVF_CHECK(k % 32 == 0, "16-bit activation rows: ", k, " values is not a multiple of 32");
  if (cpu_kernels().int_dot == IntDotKernel::Avx2Int8)
    quantize_rows_int8(x, rows, k, out);
  else
    out.q8.clear();
  out.rows = rows;
  out.k = k;
  out.q.resize((size_t)(rows * k));
  out.d.resize((size_t)(rows * k / 32));
  out.sum32.resize((size_t)(rows * k / 32));
  if (cpu_kernels().avx2) {
    for (int64_t r = 0; r < rows; ++r)
      quantize_row_int16_avx2(x + r * k, k, out.q.data() + r * k, out.d.data() + r * (k / 32),
                              out.sum32.data() + r * (k / 32));
    return;
  }
  for (int64_t b = 0; b < rows * k / 32; ++b) {
    const float* v = x + b * 32;
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(v[i]));
    const float d = amax / 32767.0f, inv = amax > 0 ? 32767.0f / amax : 0.0f;
    int16_t* q = out.q.data() + b * 32;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      q[i] = (int16_t)std::lrint(v[i] * inv);
      sum += q[i];
    }
    out.d[(size_t)b] = d;
    out.sum32[(size_t)b] = d * (float)sum;
  }
}

bool int_dot_available(DType t) {
  const IntDotKernel kernel = cpu_kernels().int_dot;
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::Q4_K:
    case DType::Q6_K:
      return kernel != IntDotKernel::None;
    case DType::Q4_1_X16: case DType::Q5_0_X16: case DType::Q8_0_X16: case DType::Q4_K_X16: case DType::Q6_K_X16:
      return kernel == IntDotKernel::Avx512Vnni;  // made only where the column kernel runs (interleaved_weights.h)
    default:
      return false;
  }
}

void int_dot_rows(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y, int64_t ldy) {
  KVF_CHECK(int_dot_available(t), "no integer dot-product kernel for ", dtype_name(t), " weights on this CPU");
  KVF_CHECK(!dtype_is_interleaved(t), "int_dot_rows: ", dtype_name(t), " weights take the column kernel");
  KVF_CHECK(x.k % dtype_block_elems(t) == 0, "integer dot products: rows of ", x.k, " values of a ", dtype_name(t),
            " weight");
  if (cpu_kernels().int_dot == IntDotKernel::Avx512Vnni)
    return int_dot_rows_avx512_vnni(t, w, row_bytes, wrows, x, y, ldy);
  if (cpu_kernels().int_dot == IntDotKernel::Avx2Int8) {
    KVF_CHECK(x.q8.size() == (size_t)(x.rows * x.k), "int_dot_rows: avx2-int8 needs the rows in 8 bits");
    return int_dot_rows_avx2_int8(t, w, row_bytes, wrows, x, y, ldy);
  }
  int_dot_rows_avx2(t, w, row_bytes, wrows, x, y, ldy);
}

}  // namespace kvf::cpu
