// AVX-512 readers of interleaved weights (interleaved_weights.h, which gives the layouts), shared by the column
// kernel (int_dot_columns_avx512.cpp) and the bf16 panel packer (pack_quant_avx512_bf16.cpp). Only code compiled
// for AVX-512F and BW (after KVF_ISA_BEGIN, core/isa_target.h) includes it; everything sits in an anonymous namespace,
// so each has its own copy.
//
// For each format: kUnits units of 32 values per block after a kHeader-byte header, each unit's values stored as
// int8 pairs (kPlanes < 0) or as nibbles with kPlanes bit planes above them and kOffset added; and scales(block,
// u), the sixteen columns' scales of unit u's halves (s0, s1) and their min, computed with the operations the base
// format's walk (int_dot_formats.inc) and dequantization use, so both give the base format's bits.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC PR 105593, as in widen_avx512.h

namespace kvf::cpu {
namespace {

struct UnitScales {
  __m512 s0, s1, min;
};

inline __m512 f16_columns(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }
inline __m512 u8_columns(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p)));
}
inline __m512 i8_columns(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)p)));
}
inline __m512 negated(__m512 v) {
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
}

template <DType T>
struct InterleavedFormat;

template <>
struct InterleavedFormat<DType::Q8_0_X16> {  // d[16]; int8 pairs
  static constexpr int kUnits = 1, kPlanes = -1, kOffset = 0, kHeader = 32;
  static constexpr bool kHalves = false, kMin = false;
  static UnitScales scales(const uint8_t* block, int) {
    const __m512 d = f16_columns(block);
    return {d, d, _mm512_setzero_ps()};
  }
};

template <>
struct InterleavedFormat<DType::Q5_0_X16> {  // d[16]; u = q + 16 in nibbles and one plane
  static constexpr int kUnits = 1, kPlanes = 1, kOffset = 16, kHeader = 32;
  static constexpr bool kHalves = false, kMin = false;
  static UnitScales scales(const uint8_t* block, int) {
    const __m512 d = f16_columns(block);
    return {d, d, _mm512_setzero_ps()};
  }
};

template <>
struct InterleavedFormat<DType::Q4_1_X16> {  // d[16], m[16]; q in nibbles; value q * d + m
  static constexpr int kUnits = 1, kPlanes = 0, kOffset = 0, kHeader = 64;
  static constexpr bool kHalves = false, kMin = true;
  static UnitScales scales(const uint8_t* block, int) {
    const __m512 d = f16_columns(block);
    return {d, d, f16_columns(block + 32)};
  }
};

template <>
struct InterleavedFormat<DType::Q4_K_X16> {  // d[16], dmin[16], sc[8][16], mn[8][16]; value (d sc) q - dmin mn
  static constexpr int kUnits = 8, kPlanes = 0, kOffset = 0, kHeader = 320;
  static constexpr bool kHalves = false, kMin = true;
  static UnitScales scales(const uint8_t* block, int u) {
    const __m512 s = _mm512_mul_ps(f16_columns(block), u8_columns(block + 64 + 16 * u));
    return {s, s, _mm512_mul_ps(negated(f16_columns(block + 32)), u8_columns(block + 192 + 16 * u))};
  }
};

template <>
struct InterleavedFormat<DType::Q6_K_X16> {  // d[16], sc[16][16]; u = q + 32 in nibbles and two planes
  static constexpr int kUnits = 8, kPlanes = 2, kOffset = 32, kHeader = 288;
  static constexpr bool kHalves = true, kMin = false;
  static UnitScales scales(const uint8_t* block, int u) {
    const __m512 d = f16_columns(block);
    return {_mm512_mul_ps(d, i8_columns(block + 32 + 32 * u)), _mm512_mul_ps(d, i8_columns(block + 48 + 32 * u)),
            _mm512_setzero_ps()};
  }
};

template <class F>
constexpr int interleaved_unit_bytes() {
  return F::kPlanes < 0 ? 512 : 64 * F::kPlanes + 256;
}
template <class F>
constexpr int interleaved_block_bytes() {
  return F::kHeader + F::kUnits * interleaved_unit_bytes<F>();
}

// Pairs 2j and 2j + 1 of the unit at `unit` (values 4j to 4j + 3 of the sixteen columns, 16-bit, value 2c + h of
// a pair in element 2c + h), q itself (the offset taken off).
template <class F>
inline void widen_interleaved_two(const uint8_t* unit, int j, __m512i& even, __m512i& odd) {
  if constexpr (F::kPlanes < 0) {
    even = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i*)(unit + 64 * j)));
    odd = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i*)(unit + 64 * j + 32)));
  } else {
    const __m256i m4 = _mm256_set1_epi8(0xF);
    const __m256i v = _mm256_loadu_si256((const __m256i*)(unit + 64 * F::kPlanes + 32 * j));
    even = _mm512_cvtepu8_epi16(_mm256_and_si256(v, m4));
    odd = _mm512_cvtepu8_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    if constexpr (F::kPlanes > 0) {
      // The planes below the top one add their bit's value; the top one's value is the offset, so where its bit
      // is clear the offset is subtracted, and where set nothing is: q = u - offset in one masked operation.
      const auto add_planes = [unit](__m512i& pair, int i) {
        for (int p = 0; p + 1 < F::kPlanes; ++p) {
          uint32_t bits;
          std::memcpy(&bits, unit + 64 * p + 4 * i, 4);
          pair = _mm512_mask_add_epi16(pair, (__mmask32)bits, pair, _mm512_set1_epi16((int16_t)(16 << p)));
        }
        uint32_t top;
        std::memcpy(&top, unit + 64 * (F::kPlanes - 1) + 4 * i, 4);
        pair = _mm512_mask_sub_epi16(pair, (__mmask32)~top, pair, _mm512_set1_epi16(F::kOffset));
      };
      add_planes(even, 2 * j);
      add_planes(odd, 2 * j + 1);
    }
  }
}

// The whole unit: pairs[i] = values 2i and 2i + 1 of the sixteen columns.
template <class F>
inline void widen_interleaved(const uint8_t* unit, __m512i* pairs) {
  for (int j = 0; j < 8; ++j) widen_interleaved_two<F>(unit, j, pairs[2 * j], pairs[2 * j + 1]);
}

}  // namespace
}  // namespace kvf::cpu

#pragma GCC diagnostic pop
