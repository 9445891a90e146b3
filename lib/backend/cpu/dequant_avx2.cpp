// Block dequantization with AVX2 (compiled for AVX2 and F16C, with -ffp-contract=off from lib/CMakeLists.txt: a
// multiply followed by an add must stay two roundings to equal the reference in core/ggml_types.cpp bit for bit).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,f16c")
#include "backend/cpu/simd_reductions.h"

namespace kvf::cpu {
namespace {

// 16 bytes -> their low nibbles (values 0..15) as 16 ints, then their high nibbles.
inline void nibbles(const uint8_t* q, __m256i& lo0, __m256i& lo1, __m256i& hi0, __m256i& hi1) {
  const __m128i b = _mm_loadu_si128((const __m128i*)q);
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0xF));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0xF));
  lo0 = _mm256_cvtepu8_epi32(lo);
  lo1 = _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8));
  hi0 = _mm256_cvtepu8_epi32(hi);
  hi1 = _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8));
}

void f16(const uint8_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(x + 2 * i))));
  for (; i < n; ++i) y[i] = f16_at(x + 2 * i);
}

void bf16(const uint8_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(x + 2 * i)));
    _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, x + 2 * i, 2);
    const uint32_t bits = (uint32_t)b << 16;
    std::memcpy(y + i, &bits, 4);
  }
}

// Q4_0 {f16 d; u8 qs[16]}: (q - 8) * d.
void q4_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 18, y += 32) {
    const __m256 d = _mm256_set1_ps(f16_at(x));
    __m256i v[4];
    nibbles(x + 2, v[0], v[1], v[2], v[3]);
    for (int j = 0; j < 4; ++j)
      _mm256_storeu_ps(y + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v[j], _mm256_set1_epi32(8))), d));
  }
}

// Q4_1 {f16 d; f16 m; u8 qs[16]}: q * d + m.
void q4_1(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 20, y += 32) {
    const __m256 d = _mm256_set1_ps(f16_at(x)), m = _mm256_set1_ps(f16_at(x + 2));
    __m256i v[4];
    nibbles(x + 4, v[0], v[1], v[2], v[3]);
    for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + 8 * j, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v[j]), d), m));
  }
}

// The fifth bits of a 5-bit block: bit j of the 32-bit word qh belongs to element j; as 4 x 8 ints of 0 or 16.
inline void fifth_bits(const uint8_t* qh_bytes, __m256i out[4]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  const __m256i bits = _mm256_set1_epi32((int)qh);
  const __m256i shifts = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int j = 0; j < 4; ++j) {
    const __m256i b = _mm256_and_si256(_mm256_srlv_epi32(bits, _mm256_add_epi32(shifts, _mm256_set1_epi32(8 * j))),
                                       _mm256_set1_epi32(1));
    out[j] = _mm256_slli_epi32(b, 4);
  }
}

// Q5_0 {f16 d; u8 qh[4]; u8 qs[16]}: (q - 16) * d.
void q5_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 22, y += 32) {
    const __m256 d = _mm256_set1_ps(f16_at(x));
    __m256i v[4], h[4];
    nibbles(x + 6, v[0], v[1], v[2], v[3]);
    fifth_bits(x + 2, h);
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_sub_epi32(_mm256_or_si256(v[j], h[j]), _mm256_set1_epi32(16));
      _mm256_storeu_ps(y + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
    }
  }
}

// Q5_1 {f16 d; f16 m; u8 qh[4]; u8 qs[16]}: q * d + m.
void q5_1(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 24, y += 32) {
    const __m256 d = _mm256_set1_ps(f16_at(x)), m = _mm256_set1_ps(f16_at(x + 2));
    __m256i v[4], h[4];
    nibbles(x + 8, v[0], v[1], v[2], v[3]);
    fifth_bits(x + 4, h);
    for (int j = 0; j < 4; ++j)
      _mm256_storeu_ps(y + 8 * j,
                       _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_or_si256(v[j], h[j])), d), m));
  }
}

// Q8_0 {f16 d; i8 qs[32]}: q * d.
void q8_0(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 34, y += 32) {
    const __m256 d = _mm256_set1_ps(f16_at(x));
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(x + 2 + 8 * j)));
      _mm256_storeu_ps(y + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
    }
  }
}

// Q4_K: 8 sub-blocks of 32 with 6-bit scales and mins (see core/ggml_types.cpp): d * sc * q - dmin * mn.
void q4_k(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 144) {
    const float d = f16_at(x), dmin = f16_at(x + 2);
    const uint8_t* s = x + 4;
    const uint8_t* q = x + 16;
    for (int sub = 0; sub < 8; sub += 2, q += 32, y += 64) {
      float scale[2], min[2];
      for (int h = 0; h < 2; ++h) {
        const int j = sub + h;
        const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        scale[h] = d * (float)sc;
        min[h] = dmin * (float)mn;
      }
      for (int half = 0; half < 2; ++half) {  // bytes 0..15 and 16..31 of the run
        __m256i v[4];
        nibbles(q + 16 * half, v[0], v[1], v[2], v[3]);
        for (int h = 0; h < 2; ++h) {  // low nibbles: the first sub-block, high: the second
          const __m256 sc = _mm256_set1_ps(scale[h]), mn = _mm256_set1_ps(min[h]);
          for (int j = 0; j < 2; ++j)
            _mm256_storeu_ps(y + 32 * h + 16 * half + 8 * j,
                             _mm256_sub_ps(_mm256_mul_ps(sc, _mm256_cvtepi32_ps(v[2 * h + j])), mn));
        }
      }
    }
  }
}

// Q6_K: two halves of 128; element l + 32k takes 4 low bits from ql and 2 high bits from qh; (d * sc) * (q - 32).
void q6_k(const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 210) {
    const uint8_t* ql = x;
    const uint8_t* qh = x + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
    const float d = f16_at(x + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
      for (int l = 0; l < 32; l += 8) {
        const __m256i lo_a = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(ql + l)));
        const __m256i lo_b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(ql + l + 32)));
        const __m256i h = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(qh + l)));
        const __m256i f = _mm256_set1_epi32(0xF), three = _mm256_set1_epi32(3), off = _mm256_set1_epi32(32);
        const __m256i q[4] = {
            _mm256_or_si256(_mm256_and_si256(lo_a, f), _mm256_slli_epi32(_mm256_and_si256(h, three), 4)),
            _mm256_or_si256(_mm256_and_si256(lo_b, f),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), three), 4)),
            _mm256_or_si256(_mm256_srli_epi32(lo_a, 4),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), three), 4)),
            _mm256_or_si256(_mm256_srli_epi32(lo_b, 4),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 6), three), 4)),
        };
        const int is = l / 16;
        for (int k = 0; k < 4; ++k) {
          const __m256 scale = _mm256_set1_ps(d * (float)sc[is + 2 * k]);
          _mm256_storeu_ps(y + l + 32 * k, _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_sub_epi32(q[k], off))));
        }
      }
    }
  }
}

}  // namespace

const DequantAvx2 kDequantAvx2 = {f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q6_k};

}  // namespace kvf::cpu

KVF_ISA_END
