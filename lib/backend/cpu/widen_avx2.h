// AVX2 helpers that widen 32 weights of a block-quantized unit to 16-bit integers, shared by the integer dot
// products (int_dot_avx2.cpp) and the 16-bit integer panels (gemm_int16_avx2.cpp). Only code compiled for
// AVX2 (after KVF_ISA_BEGIN, core/isa_target.h) includes it; everything sits in an anonymous namespace, so each of them
// has its own copy and none is shared with portable code.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace kvf::cpu {
namespace {

// 32 weights in 16 bits: values 0-15 and 16-31.
struct Widened {
  __m256i lo, hi;
};

inline Widened widen_signed(__m256i v) {
  return {_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)), _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1))};
}
inline Widened widen_signed_bytes(const uint8_t* p) {
  return {_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)p)),
          _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(p + 16)))};
}

// 16 bytes of nibbles -> their 32 values in 16 bits, the low nibbles first. Each byte is widened to 16 bits as it
// is loaded, so the low nibble is a mask and the high one a shift away: no 8-bit masking and no lane crossing (8 of
// a unit's instructions became 3; decoding one SmolLM2 sequence spends most of its time here).
inline Widened widen_nibbles(const uint8_t* qs) {
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)qs));
  return {_mm256_and_si256(b, _mm256_set1_epi16(0xF)), _mm256_srli_epi16(b, 4)};
}

// 32 bytes of nibbles -> two units: the low nibbles of all 32 bytes, then the high ones (Q4_K's layout).
inline void widen_nibble_pair(const uint8_t* qs, Widened& low, Widened& high) {
  const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)qs));
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i*)(qs + 16)));
  const __m256i m4 = _mm256_set1_epi16(0xF);
  low = {_mm256_and_si256(a, m4), _mm256_and_si256(b, m4)};
  high = {_mm256_srli_epi16(a, 4), _mm256_srli_epi16(b, 4)};
}

inline Widened minus(const Widened& w, int16_t c) {
  const __m256i v = _mm256_set1_epi16(c);
  return {_mm256_sub_epi16(w.lo, v), _mm256_sub_epi16(w.hi, v)};
}

// Row b: 16 * bit i of the byte b in 16-bit lane i. Five-bit formats look their fifth bits up here, 8 values per
// load, instead of spreading the bits over bytes (seven instructions a unit).
struct FifthBits {
  int16_t v[256][8];
};
constexpr FifthBits make_fifth_bits() {
  FifthBits t{};
  for (int b = 0; b < 256; ++b)
    for (int i = 0; i < 8; ++i) t.v[b][i] = (int16_t)((b >> i & 1) * 16);
  return t;
}
alignas(16) constexpr FifthBits kFifthBits = make_fifth_bits();

inline Widened widen_nibbles_with_fifth_bits(const uint8_t* qs, const uint8_t* qh) {
  const auto bits = [&](int i) { return _mm_load_si128((const __m128i*)kFifthBits.v[qh[i]]); };
  const Widened w = widen_nibbles(qs);
  return {_mm256_add_epi16(w.lo, _mm256_set_m128i(bits(1), bits(0))),
          _mm256_add_epi16(w.hi, _mm256_set_m128i(bits(3), bits(2)))};
}

}  // namespace
}  // namespace kvf::cpu
