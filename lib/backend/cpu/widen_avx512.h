// AVX-512 helpers that widen 32 weights of a block-quantized unit to 16-bit integers (one __m512i), shared by the
// integer dot-product kernels int_dot_avx512.cpp and int_dot_columns_avx512.cpp, as int_dot_formats.inc expects
// them. Only code compiled for AVX-512F and BW (after KVF_ISA_BEGIN) includes it; everything sits in an anonymous
// namespace, so each of them has its own copy and none is shared with portable code.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// GCC 12 reports the placeholder inside _mm512_inserti64x4 as maybe-uninitialized (GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kvf::cpu {
namespace {

using Widened = __m512i;

// 32 bytes -> 32 16-bit values.
inline __m512i widen_unsigned(__m256i u) { return _mm512_cvtepu8_epi16(u); }
inline __m512i widen_signed(__m256i v) { return _mm512_cvtepi8_epi16(v); }
inline __m512i widen_signed_bytes(const uint8_t* p) { return widen_signed(_mm256_loadu_si256((const __m256i*)p)); }

// 16 bytes of nibbles -> their 32 values, the low nibbles first; 32 bytes -> two units (low nibbles, high ones).
inline __m512i widen_nibbles(const uint8_t* qs) {
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)qs));
  return _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_and_si256(b, _mm256_set1_epi16(0xF))),
                            _mm256_srli_epi16(b, 4), 1);
}
inline void widen_nibble_pair(const uint8_t* qs, __m512i& low, __m512i& high) {
  const __m256i v = _mm256_loadu_si256((const __m256i*)qs), m4 = _mm256_set1_epi8(0xF);
  low = widen_unsigned(_mm256_and_si256(v, m4));
  high = widen_unsigned(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
}
inline __m512i minus(__m512i w, int16_t c) { return _mm512_sub_epi16(w, _mm512_set1_epi16(c)); }

inline __m512i widen_nibbles_with_fifth_bits(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m512i w = widen_nibbles(qs);
  return _mm512_mask_add_epi16(w, (__mmask32)bits, w, _mm512_set1_epi16(16));
}

}  // namespace
}  // namespace kvf::cpu

#pragma GCC diagnostic pop
