#include "backend/cpu/interleaved_weights.h"

#include <tbb/parallel_for.h>

#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "core/error.h"
#include "core/ggml_types.h"
#include "core/half.h"

namespace kvf::cpu {
namespace {

constexpr int kCols = (int)kInterleavedRows;

// What a format's interleaved layout holds (interleaved_weights.h): the header fields of a block (elements per row,
// bytes each), its units, and how a unit's values are stored.
struct Field {
  int count, bytes;
};
struct Layout {
  DType base, interleaved;
  int units;    // units of 32 values per block
  int planes;   // bit planes above the nibbles; -1: int8 pairs
  int offset;   // stored u = q + offset
  std::vector<Field> fields;
  int header_bytes() const {
    int n = 0;
    for (const Field& f : fields) n += f.count * f.bytes;
    return n;  // per row
  }
  size_t unit_bytes() const { return planes < 0 ? 512 : (size_t)(64 * planes + 256); }
};

const Layout kLayouts[] = {
    {DType::Q4_1, DType::Q4_1_X16, 1, 0, 0, {{1, 2}, {1, 2}}},
    {DType::Q5_0, DType::Q5_0_X16, 1, 1, 16, {{1, 2}}},
    {DType::Q8_0, DType::Q8_0_X16, 1, -1, 0, {{1, 2}}},
    {DType::Q4_K, DType::Q4_K_X16, 8, 0, 0, {{1, 2}, {1, 2}, {8, 1}, {8, 1}}},
    {DType::Q6_K, DType::Q6_K_X16, 8, 2, 32, {{1, 2}, {16, 1}}},
};

const Layout* layout_of(DType t) {
  for (const Layout& l : kLayouts)
    if (l.base == t || l.interleaved == t) return &l;
  return nullptr;
}

// One row's block of the base format: its header fields' bytes in order and its values' small integers q (value =
// scale * q + min, per format).
struct RowBlock {
  uint8_t header[20];
  int q[256];
};

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
float f16_at(const uint8_t* p) { return f16_to_f32(u16_at(p)); }

// The values from core's block reader; the header fields as the layout orders them (core/ggml_types.cpp has the
// block layouts).
void decode_block(DType t, const uint8_t* b, RowBlock& out) {
  block_quants(ggml_type_of(t), b, out.q);
  switch (t) {
    case DType::Q4_1: std::memcpy(out.header, b, 4); return;  // d, m
    case DType::Q5_0:
    case DType::Q8_0: std::memcpy(out.header, b, 2); return;  // d
    case DType::Q4_K:                                           // d, dmin, then the eight scales and eight mins
      std::memcpy(out.header, b, 4);
      for (int j = 0; j < 8; ++j) q4k_scale_min(j, b + 4, out.header[4 + j], out.header[12 + j]);
      return;
    case DType::Q6_K:  // d, then the sixteen scales
      std::memcpy(out.header, b + 208, 2);
      std::memcpy(out.header + 2, b + 192, 16);
      return;
    default: fail("interleaved weights: no layout for ", dtype_name(t));
  }
}

// The sixteen columns' values of unit u of their blocks, in the layout's unit form.
void write_unit(const Layout& l, const RowBlock* rows, int u, uint8_t* out) {
  const auto value = [&](int c, int v) { return rows[c].q[32 * u + v]; };
  if (l.planes < 0) {
    for (int i = 0; i < 16; ++i)
      for (int c = 0; c < kCols; ++c)
        for (int h = 0; h < 2; ++h) out[32 * i + 2 * c + h] = (uint8_t)(int8_t)value(c, 2 * i + h);
    return;
  }
  for (int p = 0; p < l.planes; ++p)
    for (int i = 0; i < 16; ++i) {
      uint32_t bits = 0;
      for (int c = 0; c < kCols; ++c)
        for (int h = 0; h < 2; ++h)
          bits |= (uint32_t)(((value(c, 2 * i + h) + l.offset) >> (4 + p)) & 1) << (2 * c + h);
      std::memcpy(out + 64 * p + 4 * i, &bits, 4);
    }
  uint8_t* nibbles = out + 64 * l.planes;
  for (int j = 0; j < 8; ++j)
    for (int c = 0; c < kCols; ++c)
      for (int h = 0; h < 2; ++h) {
        const int low = (value(c, 4 * j + h) + l.offset) & 0xF, high = (value(c, 4 * j + 2 + h) + l.offset) & 0xF;
        nibbles[32 * j + 2 * c + h] = (uint8_t)(low | (high << 4));
      }
}

// Column c's value v of the unit at unit: q.
int read_unit_value(const Layout& l, const uint8_t* unit, int c, int v) {
  const int i = v / 2, h = v % 2;
  if (l.planes < 0) return (int8_t)unit[32 * i + 2 * c + h];
  const uint8_t byte = unit[64 * l.planes + 32 * (v / 4) + 2 * c + h];
  int u = v % 4 < 2 ? byte & 0xF : byte >> 4;
  for (int p = 0; p < l.planes; ++p) u |= (int)((u32_at(unit + 64 * p + 4 * i) >> (2 * c + h)) & 1u) << (4 + p);
  return u - l.offset;
}

}  // namespace

bool dtype_is_interleaved(DType t) {
  const Layout* l = layout_of(t);
  return l && l->interleaved == t;
}

DType interleaved_dtype_for(DType t, int64_t rows, int64_t k) {
  const CpuKernels& kernels = cpu_kernels();
  const bool vnni = kernels.int_dot == IntDotKernel::Avx512Vnni;
  // The panels of many-row passes are packed from this layout by the bf16 kernels only.
  const bool bf16_panels = kernels.matmul == GemmKernel::Avx512Bf16 || kernels.matmul == GemmKernel::AmxBf16;
  const Layout* l = layout_of(t);
  if (!l || l->base != t || !vnni || !bf16_panels || rows % kInterleavedRows != 0 || k % dtype_block_elems(t) != 0)
    return t;
  return l->interleaved;
}

void interleave_rows(DType base, const uint8_t* native, int64_t rows, int64_t k, uint8_t* out) {
  const Layout* l = layout_of(base);
  KVF_CHECK(l && l->base == base, "interleave_rows: no interleaved layout of ", dtype_name(base));
  KVF_CHECK(rows % kInterleavedRows == 0 && k % dtype_block_elems(base) == 0, "interleave_rows: ", rows,
            " rows of ", k, " values");
  const size_t row_bytes = dtype_bytes(base, k), block_bytes = dtype_block_bytes(base);
  const size_t group_bytes = kCols * dtype_bytes(l->interleaved, k);
  const int64_t blocks = k / dtype_block_elems(base);
  tbb::parallel_for(int64_t{0}, rows / kInterleavedRows, [&](int64_t g) {
    const uint8_t* rows_in = native + (size_t)g * kCols * row_bytes;
    uint8_t* o = out + (size_t)g * group_bytes;
    std::vector<RowBlock> decoded(kCols);
    for (int64_t b = 0; b < blocks; ++b) {
      for (int c = 0; c < kCols; ++c) decode_block(base, rows_in + c * row_bytes + b * block_bytes, decoded[c]);
      int at = 0;  // the header: each field's elements in turn, the sixteen columns side by side
      for (const Field& f : l->fields)
        for (int e = 0; e < f.count; ++e, at += f.bytes)
          for (int c = 0; c < kCols; ++c, o += f.bytes) std::memcpy(o, decoded[c].header + at, (size_t)f.bytes);
      for (int u = 0; u < l->units; ++u, o += l->unit_bytes()) write_unit(*l, decoded.data(), u, o);
    }
  });
}

void interleaved_values(DType t, const uint8_t* group, int c, int64_t k0, int64_t kc, float* out) {
  KVF_CHECK(dtype_is_interleaved(t), "interleaved_values: ", dtype_name(t), " is not interleaved");
  const Layout& l = *layout_of(t);
  const int64_t block_elems = dtype_block_elems(t);
  const size_t block_bytes = kCols * dtype_block_bytes(t);
  for (int64_t b = k0 / block_elems; b < (k0 + kc) / block_elems; ++b) {
    const uint8_t* block = group + b * block_bytes;
    // Column c's header fields, in the order decode_block wrote them.
    uint8_t header[20];
    int at = 0;
    const uint8_t* h = block;
    for (const Field& f : l.fields)
      for (int e = 0; e < f.count; ++e, at += f.bytes, h += kCols * f.bytes)
        std::memcpy(header + at, h + c * f.bytes, (size_t)f.bytes);
    const float d = f16_at(header);
    float* y = out + (b * block_elems - k0);
    for (int u = 0; u < l.units; ++u) {
      const uint8_t* unit = block + kCols * l.header_bytes() + u * l.unit_bytes();
      for (int v = 0; v < 32; ++v) {
        const float q = (float)read_unit_value(l, unit, c, v);
        float& value = y[32 * u + v];
        switch (l.base) {  // the base format's dequantization (core/ggml_types.cpp), operation for operation
          case DType::Q4_1: value = q * d + f16_at(header + 2); break;
          case DType::Q4_K: {
            const float d1 = d * (float)header[4 + u], m1 = f16_at(header + 2) * (float)header[12 + u];
            value = d1 * q - m1;
            break;
          }
          case DType::Q6_K: value = d * (float)(int8_t)header[2 + (32 * u + v) / 16] * q; break;
          default: value = q * d; break;
        }
      }
    }
  }
}

}  // namespace kvf::cpu
