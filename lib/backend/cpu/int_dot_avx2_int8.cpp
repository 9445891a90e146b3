// Integer dot products of 8-bit activation rows with block-quantized weight rows on CPUs with AVX2 but no
// AVX-512 VNNI (the kernel table's IntDotKernel::Avx2Int8; compiled for AVX2, F16C and FMA; int_dot.h says what
// they compute): the activations rounded to 8 bits per block of 32 values (Int16Rows::q8, as llama.cpp's q8_1, a
// scale per 32 values for every format, the K-quants included), a unit of 32 weights stays in bytes and meets them
// in one vpmaddubsw (unsigned weights x signed activations into 16-bit pair sums, which cannot saturate: |pair| <=
// 2 * 128 * 127) and one vpmaddwd with ones into eight 32-bit sums, converted to float once a unit. Signed units
// (formats without a min, Q6_K) multiply |w| by the activations carrying w's sign (vpsignb), as llama.cpp does.
// The formats' walk is int_dot_formats.inc's, over the byte helpers below.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/gemm_isa.h"
#include "backend/cpu/int_dot.h"
#include "backend/cpu/unit_groups.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx2,f16c,fma")
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/row_totals_avx2.h"

namespace kvf::cpu {
namespace {

// What int_dot_formats.inc calls a widened unit is here 32 weights in bytes, values 0-31 in order: unsigned
// (0-31) where the walk hands them to unit_with_min, signed (-128..127) where it hands them to unit or
// unit_in_halves.
struct Widened {
  __m256i v;
};

inline Widened widen_signed(__m256i v) { return {v}; }
inline Widened widen_signed_bytes(const uint8_t* p) { return {_mm256_loadu_si256((const __m256i*)p)}; }

// 16 bytes of nibbles -> their 32 values, the low nibbles first.
inline Widened widen_nibbles(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128((const __m128i*)qs);
  return {_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0xF))};
}

// 32 bytes of nibbles -> the low nibbles' unit and the high nibbles' unit (Q4_K's layout).
inline void widen_nibble_pair(const uint8_t* qs, Widened& low, Widened& high) {
  const __m256i v = _mm256_loadu_si256((const __m256i*)qs), m4 = _mm256_set1_epi8(0xF);
  low = {_mm256_and_si256(v, m4)};
  high = {_mm256_and_si256(_mm256_srli_epi16(v, 4), m4)};
}

inline Widened minus(const Widened& w, int16_t c) { return {_mm256_sub_epi8(w.v, _mm256_set1_epi8((char)c))}; }

// The nibbles with 16 added to value j where bit j of the little-endian word at qh is set: the word broadcast, each
// byte j picking its bit's byte, then compared with all ones after setting every other bit.
inline Widened widen_nibbles_with_fifth_bits(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32((int)bits),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)),
                                        _mm256_set1_epi64x(-1));
  return {_mm256_or_si256(widen_nibbles(qs).v, _mm256_and_si256(set, _mm256_set1_epi8(16)))};
}

// One weight row against R 8-bit activation rows (from row0 of x): a unit is one vpmaddubsw and one vpmaddwd.
template <int R>
class RowSums : public RowTotals<R> {
 public:
  RowSums(const Int16Rows& x, int64_t row0)
      : RowTotals<R>(x.d8.data() + row0 * (x.k / 32), x.sum8.data() + row0 * (x.k / 32), x.k / 32) {
    for (int r = 0; r < R; ++r) q_[r] = x.q8.data() + (row0 + r) * x.k;
  }

  // w unsigned where the format has a min, else signed; with halves, the eight sums' low four are the first 16.
  template <int S, class Kind>
  void unit(const Widened& w, int64_t e, int j) {
    const __m256i magnitude = Kind::kMin ? w.v : _mm256_sign_epi8(w.v, w.v);
    for (int r = 0; r < R; ++r) {
      const __m256i a = Kind::kMin ? q(r, e) : _mm256_sign_epi8(q(r, e), w.v);
      const __m256 scale = Kind::kHalves ? _mm256_blend_ps(this->first(r, j), this->second(r, j), 0xF0)
                                         : this->first(r, j);
      this->template add<S>(r, pair_sums(magnitude, a), scale);
    }
  }

 private:
  // u (unsigned bytes) x a (signed bytes): the sums of four consecutive products, in f32 (exact: |sum| < 2^17).
  static __m256 pair_sums(__m256i u, __m256i a) {
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, a), _mm256_set1_epi16(1)));
  }
  __m256i q(int r, int64_t e) const { return _mm256_loadu_si256((const __m256i*)(q_[r] + e)); }

  const int8_t* q_[R];
};

#include "backend/cpu/int_dot_formats.inc"

}  // namespace

void quantize_row_int8_avx2(const float* x, int64_t k, int8_t* q, float* d, float* sum8) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / 32; ++b, x += 32, q += 32) {
    __m256 v[4], m = _mm256_setzero_ps();
    // max(|v|, m) keeps m where v is NaN, as std::max(amax, |v|) does in the scalar rounding.
    for (int i = 0; i < 4; ++i) m = _mm256_max_ps(_mm256_andnot_ps(sign, v[i] = _mm256_loadu_ps(x + 8 * i)), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    const float amax = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
    // As the portable rounding: x * (127 / amax) to the nearest integer, ties to even.
    const __m256 inv = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
    __m256i n[4];
    for (int i = 0; i < 4; ++i) n[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inv));
    __m256i total = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    // packs interleave the 128-bit lanes: undo it so the values stay in order.
    const __m256i w16a = _mm256_packs_epi32(n[0], n[1]), w16b = _mm256_packs_epi32(n[2], n[3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w16a, w16b),
                                                      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i*)q, bytes);
    const float scale = amax / 127.0f;
    d[b] = scale;
    sum8[b] = scale * (float)_mm_cvtsi128_si32(t);
  }
}

void int_dot_rows_avx2_int8(DType t, const uint8_t* w, size_t row_bytes, int wrows, const Int16Rows& x, float* y,
                            int64_t ldy) {
  // Up to 4 activation rows per pass, as the 16-bit kernel.
  for (int64_t r0 = 0; r0 < x.rows; r0 += 4) {
    switch (std::min<int64_t>(4, x.rows - r0)) {
      case 1: rows<RowSums, 1>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 2: rows<RowSums, 2>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      case 3: rows<RowSums, 3>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
      default: rows<RowSums, 4>(t, w, row_bytes, wrows, x, r0, y, ldy); break;
    }
  }
}

}  // namespace kvf::cpu

KVF_ISA_END
