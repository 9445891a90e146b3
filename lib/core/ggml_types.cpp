// Block layouts follow ggml-common.h; the arithmetic follows ggml's reference (de)quantizers operation by operation,
// so results are bit-identical to ggml and to gguf-py (tests/fixtures/quant checks this).
//
// Contracting a*b+c into one fused multiply-add rounds once instead of twice and would break that bit-identity;
// lib/CMakeLists.txt compiles this file with -ffp-contract=off.

#include "core/ggml_types.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/half.h"

namespace kvf {
namespace {

struct TypeInfo {
  GgmlType type;
  const char* name;
  int64_t block_elems;
  size_t block_bytes;
  bool dequantizable;
};

constexpr int64_t QK = 32;     // elements per block of the *_0 / *_1 types
constexpr int64_t QK_K = 256;  // elements per super-block of the K-quants

constexpr TypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", QK, 2 + QK / 2, true},
    {GgmlType::Q4_1, "Q4_1", QK, 2 + 2 + QK / 2, true},
    {GgmlType::Q5_0, "Q5_0", QK, 2 + 4 + QK / 2, true},
    {GgmlType::Q5_1, "Q5_1", QK, 2 + 2 + 4 + QK / 2, true},
    {GgmlType::Q8_0, "Q8_0", QK, 2 + QK, true},
    {GgmlType::Q8_1, "Q8_1", QK, 2 + 2 + QK, false},  // f16 d, f16 s (current ggml; gguf-py still says 40)
    {GgmlType::Q2_K, "Q2_K", QK_K, QK_K / 16 + QK_K / 4 + 2 + 2, false},
    {GgmlType::Q3_K, "Q3_K", QK_K, QK_K / 8 + QK_K / 4 + 12 + 2, false},
    {GgmlType::Q4_K, "Q4_K", QK_K, 2 + 2 + 12 + QK_K / 2, true},
    {GgmlType::Q5_K, "Q5_K", QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2, false},
    {GgmlType::Q6_K, "Q6_K", QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + 2, true},
    {GgmlType::Q8_K, "Q8_K", QK_K, 4 + QK_K + QK_K / 8, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
};

const TypeInfo* find(GgmlType t) {
  for (const TypeInfo& info : kTypes) {
    if (info.type == t) return &info;
  }
  return nullptr;
}

// Unaligned little-endian loads: tensor data in a file is only as aligned as the file says.
inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// ---- dequantization: x points at nb consecutive blocks, y receives nb * block_elems floats ----

void dequant_f32(const uint8_t* x, float* y, int64_t n) { std::memcpy(y, x, (size_t)n * 4); }

void dequant_f16(const uint8_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = load_f16(x + 2 * i);
}

void dequant_bf16(const uint8_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, x + 2 * i, 2);
    y[i] = bf16_to_f32(b);
  }
}

// The formats' scales and mins combine with block_quants' integers as ggml's reference dequantizers do,
// operation for operation; x points at nb consecutive blocks.
void dequant_blocks(GgmlType t, const uint8_t* x, float* y, int64_t nb) {
  const TypeInfo& info = *find(t);
  int q[QK_K];
  for (int64_t b = 0; b < nb; ++b, x += info.block_bytes, y += info.block_elems) {
    block_quants(t, x, q);
    switch (t) {
      case GgmlType::Q4_0:  // value q * d
      case GgmlType::Q5_0:
      case GgmlType::Q8_0: {
        const float d = load_f16(x);
        for (int j = 0; j < QK; ++j) y[j] = (float)q[j] * d;
        break;
      }
      case GgmlType::Q4_1:  // value q * d + m
      case GgmlType::Q5_1: {
        const float d = load_f16(x), m = load_f16(x + 2);
        for (int j = 0; j < QK; ++j) y[j] = (float)q[j] * d + m;
        break;
      }
      case GgmlType::Q4_K: {  // value q * (d * sc) - dmin * mn, per sub-block of 32
        const float d = load_f16(x), dmin = load_f16(x + 2);
        for (int sub = 0; sub < 8; ++sub) {
          uint8_t sc, mn;
          q4k_scale_min(sub, x + 4, sc, mn);
          const float d1 = d * sc, m1 = dmin * mn;
          for (int l = 0; l < 32; ++l) y[32 * sub + l] = d1 * (float)q[32 * sub + l] - m1;
        }
        break;
      }
      case GgmlType::Q6_K: {  // value q * (d * scales[element / 16])
        const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
        const float d = load_f16(x + 208);
        for (int g = 0; g < QK_K / 16; ++g) {
          const float dg = d * sc[g];
          for (int l = 0; l < 16; ++l) y[16 * g + l] = dg * (float)q[16 * g + l];
        }
        break;
      }
      default: fail("dequantize_row: no block layout for ", info.name);
    }
  }
}

// ---- reference quantizers (ggml's quantize_row_*_ref) ----

void quant_q8_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += QK, y += 34) {
    float amax = 0.0f;
    for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(y, f32_to_f16(d));
    for (int j = 0; j < QK; ++j) y[2 + j] = (uint8_t)(int8_t)std::round(x[j] * id);
  }
}

// Q4_0 scales by the element of largest magnitude (the first one on ties), sign included, mapped to -8.
void quant_q4_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += QK, y += 18) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(y, f32_to_f16(d));
    for (int j = 0; j < QK / 2; ++j) {
      const uint8_t lo = (uint8_t)std::min(15, (int)(int8_t)(x[j] * id + 8.5f));
      const uint8_t hi = (uint8_t)std::min(15, (int)(int8_t)(x[j + QK / 2] * id + 8.5f));
      y[2 + j] = (uint8_t)(lo | (hi << 4));
    }
  }
}

void quant_q4_1(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += QK, y += 20) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < QK; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(y, f32_to_f16(d));
    store_u16(y + 2, f32_to_f16(min));
    for (int j = 0; j < QK / 2; ++j) {
      const uint8_t lo = (uint8_t)std::min(15, (int)(int8_t)((x[j] - min) * id + 0.5f));
      const uint8_t hi = (uint8_t)std::min(15, (int)(int8_t)((x[j + QK / 2] - min) * id + 0.5f));
      y[2 + 2 + j] = (uint8_t)(lo | (hi << 4));
    }
  }
}

const TypeInfo& checked_blocks(GgmlType t, int64_t n, const char* op) {
  const TypeInfo* info = find(t);
  KVF_CHECK(info, op, ": unknown ggml type ", ggml_type_name(t));
  KVF_CHECK(n >= 0 && n % info->block_elems == 0, op, ": ", n, " elements of ", info->name,
            " are not a whole number of ", info->block_elems, "-element blocks");
  return *info;
}

}  // namespace

// Loops written the way the compiler vectorizes them (no division per element).
void block_quants(GgmlType t, const uint8_t* b, int* q) {
  // The *_0 / *_1 types keep element j < 16 in the low nibble of qs[j] and j >= 16 in its high nibble; the 5-bit
  // ones the fifth bit of element j in bit j of the little-endian word qh.
  const auto nibbles = [q](const uint8_t* qs, uint32_t qh, int offset) {
    for (int j = 0; j < QK / 2; ++j) {
      q[j] = ((qs[j] & 0xF) | (int)(((qh >> j) & 1u) << 4)) - offset;
      q[j + QK / 2] = ((qs[j] >> 4) | (int)(((qh >> (j + QK / 2)) & 1u) << 4)) - offset;
    }
  };
  switch (t) {
    case GgmlType::Q4_0: return nibbles(b + 2, 0, 8);                 // {f16 d; u8 qs[16]}
    case GgmlType::Q4_1: return nibbles(b + 4, 0, 0);                 // {f16 d; f16 m; u8 qs[16]}
    case GgmlType::Q5_0: return nibbles(b + 6, load_u32(b + 2), 16);  // {f16 d; u8 qh[4]; u8 qs[16]}
    case GgmlType::Q5_1: return nibbles(b + 8, load_u32(b + 4), 0);   // {f16 d; f16 m; u8 qh[4]; u8 qs[16]}
    case GgmlType::Q8_0:  // {f16 d; i8 qs[32]}
      for (int j = 0; j < QK; ++j) q[j] = (int8_t)b[2 + j];
      return;
    case GgmlType::Q4_K:  // {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: each 32-byte run of qs holds two
                          // sub-blocks of 32, the low nibbles then the high ones
      for (int run = 0; run < 4; ++run) {
        const uint8_t* qs = b + 16 + 32 * run;
        for (int l = 0; l < 32; ++l) {
          q[64 * run + l] = qs[l] & 0xF;
          q[64 * run + 32 + l] = qs[l] >> 4;
        }
      }
      return;
    case GgmlType::Q6_K:  // {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: two halves of 128; in each, element
                          // l + 32k (k = 0..3) takes 4 low bits from nibble k/2 of ql[l + 32(k%2)] and 2 high
                          // bits from bits 2k of qh[l]
      for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b + 64 * half;
        const uint8_t* qh = b + 128 + 32 * half;
        int* y = q + 128 * half;
        for (int l = 0; l < 32; ++l) {
          y[l] = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
          y[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
          y[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          y[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        }
      }
      return;
    default: fail("block_quants: ", ggml_type_name(t), " is not a block-quantized type this build reads");
  }
}

const char* ggml_type_name(GgmlType t) {
  if (const TypeInfo* info = find(t)) return info->name;
  // Unknown ids get a per-thread buffer: the pointer stays valid until this thread's next unknown-type call.
  thread_local char buf[24];
  std::snprintf(buf, sizeof buf, "type %u", (unsigned)t);
  return buf;
}

bool ggml_type_supported(GgmlType t) {
  const TypeInfo* info = find(t);
  return info && info->dequantizable;
}

int64_t ggml_block_elems(GgmlType t) {
  const TypeInfo* info = find(t);
  return info ? info->block_elems : 0;
}

size_t ggml_block_bytes(GgmlType t) {
  const TypeInfo* info = find(t);
  return info ? info->block_bytes : 0;
}

size_t ggml_row_bytes(GgmlType t, int64_t n) {
  const TypeInfo& info = checked_blocks(t, n, "ggml_row_bytes");
  const uint64_t blocks = (uint64_t)(n / info.block_elems);
  KVF_CHECK(blocks <= SIZE_MAX / info.block_bytes, "ggml_row_bytes: ", n, " elements of ", info.name,
            " overflow the byte count");
  return (size_t)blocks * info.block_bytes;
}

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  const TypeInfo& info = checked_blocks(t, n, "dequantize_row");
  if (n == 0) return;  // also spares memcpy a null pointer
  const auto* x = static_cast<const uint8_t*>(src);
  const int64_t nb = n / info.block_elems;
  switch (t) {
    case GgmlType::F32: return dequant_f32(x, dst, n);
    case GgmlType::F16: return dequant_f16(x, dst, n);
    case GgmlType::BF16: return dequant_bf16(x, dst, n);
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: return dequant_blocks(t, x, dst, nb);
    default: fail("dequantize_row: converting ", info.name, " to f32 is not supported");
  }
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  const TypeInfo& info = checked_blocks(t, n, "quantize_row");
  if (n == 0) return;  // also spares memcpy a null pointer
  auto* y = static_cast<uint8_t*>(dst);
  const int64_t nb = n / info.block_elems;
  switch (t) {
    case GgmlType::F32: std::memcpy(y, src, (size_t)n * 4); return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) store_u16(y + 2 * i, f32_to_f16(src[i]));
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) store_u16(y + 2 * i, f32_to_bf16(src[i]));
      return;
    case GgmlType::Q4_0: return quant_q4_0(src, y, nb);
    case GgmlType::Q4_1: return quant_q4_1(src, y, nb);
    case GgmlType::Q8_0: return quant_q8_0(src, y, nb);
    default: fail("quantize_row: converting f32 to ", info.name, " is not supported");
  }
}

namespace {

constexpr std::pair<GgmlType, DType> kStoredAs[] = {
    {GgmlType::F32, DType::F32},   {GgmlType::F16, DType::F16},   {GgmlType::BF16, DType::BF16},
    {GgmlType::Q4_0, DType::Q4_0}, {GgmlType::Q4_1, DType::Q4_1}, {GgmlType::Q5_0, DType::Q5_0},
    {GgmlType::Q5_1, DType::Q5_1}, {GgmlType::Q8_0, DType::Q8_0}, {GgmlType::Q4_K, DType::Q4_K},
    {GgmlType::Q6_K, DType::Q6_K},
};

}  // namespace

bool dtype_of_ggml(GgmlType t, DType* out) {
  for (const auto& [g, d] : kStoredAs)
    if (g == t) {
      *out = d;
      return true;
    }
  return false;
}

GgmlType ggml_type_of(DType t) {
  for (const auto& [g, d] : kStoredAs)
    if (d == t) return g;
  fail("ggml_type_of: ", dtype_name(t), " has no ggml type");
}

}  // namespace kvf
