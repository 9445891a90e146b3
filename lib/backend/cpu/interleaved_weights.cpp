#include "backend/cpu/interleaved_weights.h"

#include <tbb/parallel_for.h>

#include <cstring>

#include "backend/cpu/cpu_features.h"
#include "core/error.h"
#include "core/half.h"

namespace kvf::cpu {
namespace {

constexpr int kCols = (int)kInterleavedRows;
constexpr size_t kScaleBytes = 2 * kCols;  // d[16], f16

uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 32 values of a base-format block as small integers (q, so that value = q * d) and its scale's f16 bits.
void q8_0_block(const uint8_t* b, int q[32], uint16_t& d) {
  std::memcpy(&d, b, 2);
  for (int v = 0; v < 32; ++v) q[v] = (int8_t)b[2 + v];
}

// Q5_0 {f16 d; u32 qh; u8 qs[16]}: value v < 16 is the low nibble of qs[v], v >= 16 the high nibble of qs[v - 16],
// each with bit v of qh as its fifth bit; q is that minus 16.
void q5_0_block(const uint8_t* b, int q[32], uint16_t& d) {
  std::memcpy(&d, b, 2);
  const uint32_t qh = u32_at(b + 2);
  for (int v = 0; v < 32; ++v) {
    const int nibble = v < 16 ? b[6 + v] & 0xF : b[6 + v - 16] >> 4;
    q[v] = (nibble | (int)(((qh >> v) & 1u) << 4)) - 16;
  }
}

// One unit of sixteen columns (q[c][v], d[c]) in the interleaved layout at out.
void write_q8_0_unit(const int q[kCols][32], const uint16_t d[kCols], uint8_t* out) {
  std::memcpy(out, d, kScaleBytes);
  int8_t* pairs = reinterpret_cast<int8_t*>(out + kScaleBytes);
  for (int i = 0; i < 16; ++i)
    for (int c = 0; c < kCols; ++c)
      for (int h = 0; h < 2; ++h) pairs[(i * kCols + c) * 2 + h] = (int8_t)q[c][2 * i + h];
}

void write_q5_0_unit(const int q[kCols][32], const uint16_t d[kCols], uint8_t* out) {
  std::memcpy(out, d, kScaleBytes);
  uint8_t* fifth = out + kScaleBytes;
  uint8_t* nibbles = fifth + 4 * 16;
  for (int i = 0; i < 16; ++i) {
    uint32_t bits = 0;
    for (int c = 0; c < kCols; ++c)
      for (int h = 0; h < 2; ++h) bits |= (uint32_t)(((q[c][2 * i + h] + 16) >> 4) & 1) << (2 * c + h);
    std::memcpy(fifth + 4 * i, &bits, 4);
  }
  for (int j = 0; j < 8; ++j)
    for (int c = 0; c < kCols; ++c)
      for (int h = 0; h < 2; ++h) {
        const int low = (q[c][4 * j + h] + 16) & 0xF, high = (q[c][4 * j + 2 + h] + 16) & 0xF;
        nibbles[(j * kCols + c) * 2 + h] = (uint8_t)(low | (high << 4));
      }
}

// Column c's q and d of the interleaved unit at unit.
void read_unit(DType t, const uint8_t* unit, int c, int q[32], float& d) {
  uint16_t bits;
  std::memcpy(&bits, unit + 2 * c, 2);
  d = f16_to_f32(bits);
  if (t == DType::Q8_0_X16) {
    const int8_t* pairs = reinterpret_cast<const int8_t*>(unit + kScaleBytes);
    for (int i = 0; i < 16; ++i)
      for (int h = 0; h < 2; ++h) q[2 * i + h] = pairs[(i * kCols + c) * 2 + h];
    return;
  }
  const uint8_t* fifth = unit + kScaleBytes;
  const uint8_t* nibbles = fifth + 4 * 16;
  for (int j = 0; j < 8; ++j)
    for (int h = 0; h < 2; ++h) {
      const uint8_t byte = nibbles[(j * kCols + c) * 2 + h];
      q[4 * j + h] = byte & 0xF;
      q[4 * j + 2 + h] = byte >> 4;
    }
  for (int v = 0; v < 32; ++v) q[v] += (int)((u32_at(fifth + 4 * (v / 2)) >> (2 * c + v % 2)) & 1u) * 16 - 16;
}

}  // namespace

bool dtype_is_interleaved(DType t) { return t == DType::Q5_0_X16 || t == DType::Q8_0_X16; }

DType base_dtype(DType t) {
  switch (t) {
    case DType::Q5_0_X16: return DType::Q5_0;
    case DType::Q8_0_X16: return DType::Q8_0;
    default: return t;
  }
}

DType interleaved_dtype_for(DType t, int64_t rows, int64_t k) {
  static const bool vnni = cpu_features().avx512_vnni;
  // The panels of many-row passes are packed from this layout by the bf16 kernels only.
  static const bool bf16_panels =
      active_gemm_kernel() == GemmKernel::Avx512Bf16 || active_gemm_kernel() == GemmKernel::AmxBf16;
  if (!vnni || !bf16_panels || rows % kInterleavedRows != 0 || k % 32 != 0) return t;
  if (t == DType::Q8_0) return DType::Q8_0_X16;
  if (t == DType::Q5_0) return DType::Q5_0_X16;
  return t;
}

void interleave_rows(DType base, const uint8_t* native, int64_t rows, int64_t k, uint8_t* out) {
  KVF_CHECK(base == DType::Q8_0 || base == DType::Q5_0, "interleave_rows: no interleaved layout of ",
            dtype_name(base));
  KVF_CHECK(rows % kInterleavedRows == 0 && k % 32 == 0, "interleave_rows: ", rows, " rows of ", k, " values");
  const size_t row_bytes = dtype_bytes(base, k), block_bytes = dtype_block_bytes(base);
  const size_t unit_bytes = kCols * block_bytes;
  tbb::parallel_for(int64_t{0}, rows / kInterleavedRows, [&](int64_t g) {
    const uint8_t* rows_in = native + (size_t)g * kCols * row_bytes;
    uint8_t* group = out + (size_t)g * kCols * row_bytes;
    int q[kCols][32];
    uint16_t d[kCols];
    for (int64_t u = 0; u < k / 32; ++u) {
      for (int c = 0; c < kCols; ++c) {
        const uint8_t* block = rows_in + c * row_bytes + u * block_bytes;
        (base == DType::Q8_0 ? q8_0_block : q5_0_block)(block, q[c], d[c]);
      }
      (base == DType::Q8_0 ? write_q8_0_unit : write_q5_0_unit)(q, d, group + u * unit_bytes);
    }
  });
}

void interleaved_values(DType t, const uint8_t* group, int c, int64_t k0, int64_t kc, float* out) {
  KVF_CHECK(dtype_is_interleaved(t), "interleaved_values: ", dtype_name(t), " is not interleaved");
  const size_t unit_bytes = kCols * dtype_block_bytes(t);
  for (int64_t e = k0; e < k0 + kc; e += 32) {
    int q[32];
    float d;
    read_unit(t, group + (size_t)(e / 32) * unit_bytes, c, q, d);
    for (int v = 0; v < 32; ++v) out[e - k0 + v] = (float)q[v] * d;
  }
}

}  // namespace kvf::cpu
