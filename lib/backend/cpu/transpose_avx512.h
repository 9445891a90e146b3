// A 16 x 16 transpose of 32-bit words in AVX-512 registers, shared by the kernels that pack bf16 panels. Include
// only after KVF_ISA_BEGIN with AVX-512F (core/isa_target.h); GCC 12 reports the placeholders inside its shuffle
// intrinsics as maybe-uninitialized (GCC PR 105593), so those files silence that warning around their code.
#pragma once
#include <immintrin.h>

namespace kvf::cpu {

// Sixteen rows of sixteen 32-bit words each -> r[j] holds word j of every row (a 16 x 16 transpose in three
// rounds of shuffles: words within 128-bit lanes, then pairs of words, then the lanes themselves).
inline void transpose_16x16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  __m512i u[16];  // u[4g + e]: word e of every 128-bit lane of rows 4g..4g+3
  for (int g = 0; g < 4; ++g) {
    u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512i a = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x88), b = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xDD);
    const __m512i c = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x88), d = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xDD);
    r[e] = _mm512_shuffle_i32x4(a, c, 0x88);       // lane 0 of every row group: word e
    r[4 + e] = _mm512_shuffle_i32x4(b, d, 0x88);   // lane 1: word 4 + e
    r[8 + e] = _mm512_shuffle_i32x4(a, c, 0xDD);   // lane 2: word 8 + e
    r[12 + e] = _mm512_shuffle_i32x4(b, d, 0xDD);  // lane 3: word 12 + e
  }
}

}  // namespace kvf::cpu
