// Integer dot products of 16-bit activation rows with block-quantized weight rows (compiled with -mavx512f
// -mavx512bw -mavx512vl -mavx512vnni -mf16c -mfma; int_dot.h says what they compute).
//
// Every weight format is read as units of 32 values, each value s * u + c with u a small integer (8 bits at most)
// and s, c constant over the unit (s over each half of 16, Q6_K). Against an activation block x = q * d:
//   sum(w * x) = s * d * sum(u * q) + c * (d * sum(q))
// The first sum is one vpdpwssd over the unit widened to 16 bits (|u * q| sums stay below 2^24), the second is
// the block's precomputed sum (Int16Rows::sum32), needed only where c is not 0 (formats with a min).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/simd_reductions.h"

namespace kvf::cpu {
namespace {

// Running sums of one weight row against R activation rows (from row0 of x). Units alternate between two
// accumulator slots S (fixed by their place in the row), so that consecutive units' additions do not wait for
// each other.
template <int R>
class RowSums {
 public:
  RowSums(const Int16Rows& x, int64_t row0) : x_(x), row0_(row0) {
    for (int r = 0; r < R; ++r)
      for (int slot = 0; slot < 2; ++slot) {
        acc_[slot][r] = _mm512_setzero_ps();
        off_[slot][r] = 0;
      }
  }

  // The 32 weights at value e of the row, widened to 16 bits: s * w.
  template <int S>
  void unit(__m512i w, int64_t e, float s) {
    for (int r = 0; r < R; ++r)
      acc_[S][r] = _mm512_fmadd_ps(products(w, r, e), _mm512_set1_ps(s * x_.d[(size_t)block(r, e)]), acc_[S][r]);
  }

  // The same with a min: s * w + c.
  template <int S>
  void unit_with_min(__m512i w, int64_t e, float s, float c) {
    unit<S>(w, e, s);
    for (int r = 0; r < R; ++r) off_[S][r] += c * x_.sum32[(size_t)block(r, e)];
  }

  // s0 * w for the first 16 values, s1 * w for the last 16 (vpdpwssd lanes 0-7 and 8-15).
  template <int S>
  void unit_in_halves(__m512i w, int64_t e, float s0, float s1) {
    const __m512 s = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(s0), _mm512_set1_ps(s1));
    for (int r = 0; r < R; ++r) {
      const __m512 scale = _mm512_mul_ps(s, _mm512_set1_ps(x_.d[(size_t)block(r, e)]));
      acc_[S][r] = _mm512_fmadd_ps(products(w, r, e), scale, acc_[S][r]);
    }
  }

  void store(float* y, int64_t ldy) const {
    for (int r = 0; r < R; ++r)
      y[r * ldy] = hsum(_mm512_add_ps(acc_[0][r], acc_[1][r])) + (off_[0][r] + off_[1][r]);
  }

 private:
  int64_t block(int r, int64_t e) const { return (row0_ + r) * (x_.k / 32) + e / 32; }

  // Pairwise sums w * q of the unit (widened to 16 bits) against row r's activations, as 16 floats.
  __m512 products(__m512i w, int r, int64_t e) const {
    const __m512i q = _mm512_loadu_si512(x_.q.data() + (row0_ + r) * x_.k + e);
    return _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_dpwssd_epi32(_mm512_setzero_si512(), w, q));
  }

  const Int16Rows& x_;
  int64_t row0_;
  __m512 acc_[2][R];
  float off_[2][R];
};

template <int S>
using Slot = std::integral_constant<int, S>;

// Calls unit(block, e, slot) for the blocks of 32 values of a row (`bytes` each), alternating the slots.
template <class Unit>
inline void each_block(const uint8_t* w, size_t bytes, int64_t k, Unit unit) {
  int64_t e = 0;
  for (; e + 64 <= k; e += 64, w += 2 * bytes) {
    unit(w, e, Slot<0>());
    unit(w + bytes, e + 32, Slot<1>());
  }
  if (e < k) unit(w, e, Slot<0>());
}

// 32 bytes -> 32 16-bit values.
inline __m512i widen_unsigned(__m256i u) { return _mm512_cvtepu8_epi16(u); }
inline __m512i widen_signed(__m256i v) { return _mm512_cvtepi8_epi16(v); }

// 16 bytes of nibbles -> 32 values: the low nibbles, then the high ones.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128((const __m128i*)qs);
  const __m128i m = _mm_set1_epi8(0xF);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

// Adds 16 to value j where bit j of the little-endian word at qh is set (the 5-bit formats' fifth bits).
inline __m256i with_fifth_bits(__m256i u, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return _mm256_mask_add_epi8(u, (__mmask32)bits, u, _mm256_set1_epi8(16));
}

// Layouts: core/ggml_types.cpp. Formats whose values are q - offset subtract it in 8 bits and multiply signed
// values; those with a min (Q4_1, Q5_1, Q4_K) multiply the unsigned q and add min * sum(x) per unit.
template <int R>
void row_q4_0(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  const __m256i eight = _mm256_set1_epi8(8);
  each_block(w, 18, k, [&](const uint8_t* b, int64_t e, auto slot) {
    sums.template unit<slot()>(widen_signed(_mm256_sub_epi8(nibbles(b + 2), eight)), e, f16_at(b));
  });
}

template <int R>
void row_q4_1(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  each_block(w, 20, k, [&](const uint8_t* b, int64_t e, auto slot) {
    sums.template unit_with_min<slot()>(widen_unsigned(nibbles(b + 4)), e, f16_at(b), f16_at(b + 2));
  });
}

template <int R>
void row_q5_0(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  const __m256i sixteen = _mm256_set1_epi8(16);
  each_block(w, 22, k, [&](const uint8_t* b, int64_t e, auto slot) {
    const __m256i q = with_fifth_bits(nibbles(b + 6), b + 2);
    sums.template unit<slot()>(widen_signed(_mm256_sub_epi8(q, sixteen)), e, f16_at(b));
  });
}

template <int R>
void row_q5_1(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  each_block(w, 24, k, [&](const uint8_t* b, int64_t e, auto slot) {
    sums.template unit_with_min<slot()>(widen_unsigned(with_fifth_bits(nibbles(b + 8), b + 4)), e, f16_at(b),
                                        f16_at(b + 2));
  });
}

template <int R>
void row_q8_0(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  each_block(w, 34, k, [&](const uint8_t* b, int64_t e, auto slot) {
    sums.template unit<slot()>(widen_signed(_mm256_loadu_si256((const __m256i*)(b + 2))), e, f16_at(b));
  });
}

// Q4_K's six-bit scale and min of sub-block j (the packing is described at core/ggml_types.cpp's q4k_scale_min).
inline void q4k_scale_min(int j, const uint8_t* s, int& sc, int& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

template <int R>
void row_q4_k(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  const __m256i m4 = _mm256_set1_epi8(0xF);
  for (int64_t e = 0; e < k; e += 256, w += 144) {
    const float d = f16_at(w), dmin = f16_at(w + 2);
    const uint8_t* q = w + 16;
    for (int sub = 0; sub < 8; sub += 2, q += 32) {
      const __m256i v = _mm256_loadu_si256((const __m256i*)q);
      int sc, mn;
      q4k_scale_min(sub, w + 4, sc, mn);
      sums.template unit_with_min<0>(widen_unsigned(_mm256_and_si256(v, m4)), e + 32 * sub, d * (float)sc,
                                     -dmin * (float)mn);
      q4k_scale_min(sub + 1, w + 4, sc, mn);
      sums.template unit_with_min<1>(widen_unsigned(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4)), e + 32 * sub + 32,
                                     d * (float)sc, -dmin * (float)mn);
    }
  }
}

template <int R>
void row_q6_k(const uint8_t* w, RowSums<R>& sums, int64_t k) {
  const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(0x30), offset = _mm256_set1_epi8(32);
  for (int64_t e = 0; e < k; e += 256, w += 210) {
    const float d = f16_at(w + 208);
    const uint8_t* ql = w;
    const uint8_t* qh = w + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(w + 192);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8) {
      const __m256i l0 = _mm256_loadu_si256((const __m256i*)ql), l1 = _mm256_loadu_si256((const __m256i*)(ql + 32));
      const __m256i h = _mm256_loadu_si256((const __m256i*)qh);
      const __m256i u[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2)),
          _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                          _mm256_and_si256(_mm256_srli_epi16(h, 2), m2)),
      };
      const auto unit = [&](int j, auto slot) {  // values 32j.. of this half; scales per 16 values
        sums.template unit_in_halves<slot()>(widen_signed(_mm256_sub_epi8(u[j], offset)), e + 128 * half + 32 * j,
                                             d * (float)sc[2 * j], d * (float)sc[2 * j + 1]);
      };
      unit(0, Slot<0>());
      unit(1, Slot<1>());
      unit(2, Slot<0>());
      unit(3, Slot<1>());
    }
  }
}

template <int R>
void rows(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, int64_t row0, float* y,
          int64_t ldy) {
  for (int j = 0; j < wrows; ++j, w += row_bytes) {
    RowSums<R> sums(x, row0);
    switch (t) {
      case DType::Q4_0: row_q4_0(w, sums, x.k); break;
      case DType::Q4_1: row_q4_1(w, sums, x.k); break;
      case DType::Q5_0: row_q5_0(w, sums, x.k); break;
      case DType::Q5_1: row_q5_1(w, sums, x.k); break;
      case DType::Q8_0: row_q8_0(w, sums, x.k); break;
      case DType::Q4_K: row_q4_k(w, sums, x.k); break;
      case DType::Q6_K: row_q6_k(w, sums, x.k); break;
      default: return;  // int_dot_rows admits only the types above
    }
    sums.store(y + row0 * ldy + j, ldy);
  }
}

}  // namespace

void int_dot_rows_avx512_vnni(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                               int64_t ldy) {
  // Up to 8 activation rows per pass, so each weight unit is widened once for all of them (16 accumulators of the
  // 32 registers): decoding 8 sequences ran 5% (Qwen2.5 0.5B) and 2% (SmolLM2) faster than with passes of 4.
  for (int64_t r0 = 0; r0 < x.rows; r0 += 8) {
    switch (std::min<int64_t>(8, x.rows - r0)) {
      case 1: rows<1>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 2: rows<2>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 3: rows<3>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 4: rows<4>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 5: rows<5>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 6: rows<6>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 7: rows<7>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      default: rows<8>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
    }
  }
}

}  // namespace kvf::cpu
