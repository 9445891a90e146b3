// Block-quantized weight rows straight into the AVX-512 BF16 kernel's panels (compiled for AVX-512 BF16 and F16C,
// with -ffp-contract=off from lib/CMakeLists.txt). Each block of 32 values is dequantized in two registers with the
// reference's operations (core/ggml_types.cpp: a multiply and an add stay two roundings), rounded to bf16 and
// transposed into place, so a panel holds the same bits as weight_values followed by pack_panel, without the f32
// copy of the panel going through memory.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/gemm_isa.h"
#include "core/isa_target.h"

KVF_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,f16c")
#include "backend/cpu/interleaved_avx512.h"
#include "backend/cpu/simd_reductions.h"
#include "backend/cpu/transpose_avx512.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see transpose_avx512.h

namespace kvf::cpu {
namespace {

constexpr int kCols = 64;

// The 32 values of block `block` (counted in 32s from the row's start) as lo = values 0..15, hi = 16..31.
using Block32Fn = void (*)(const uint8_t* row, int64_t block, __m512& lo, __m512& hi);

inline __m512i bytes_as_ints(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p)); }

// Q4_0 {f16 d; u8 qs[16]}: element i is the low nibble of qs[i], element 16 + i its high nibble; (q - 8) * d.
void q4_0(const uint8_t* row, int64_t block, __m512& lo, __m512& hi) {
  const uint8_t* b = row + block * 18;
  const __m512 d = _mm512_set1_ps(f16_at(b));
  const __m512i q = bytes_as_ints(b + 2), eight = _mm512_set1_epi32(8), f = _mm512_set1_epi32(0xF);
  lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(q, f), eight)), d);
  hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(q, 4), eight)), d);
}

// Q4_1 {f16 d; f16 m; u8 qs[16]}: q * d + m.
void q4_1(const uint8_t* row, int64_t block, __m512& lo, __m512& hi) {
  const uint8_t* b = row + block * 20;
  const __m512 d = _mm512_set1_ps(f16_at(b)), m = _mm512_set1_ps(f16_at(b + 2));
  const __m512i q = bytes_as_ints(b + 4);
  lo = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, _mm512_set1_epi32(0xF))), d), m);
  hi = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4)), d), m);
}

// Q8_0 {f16 d; i8 qs[32]}: q * d.
void q8_0(const uint8_t* row, int64_t block, __m512& lo, __m512& hi) {
  const uint8_t* b = row + block * 34;
  const __m512 d = _mm512_set1_ps(f16_at(b));
  lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(b + 2)))), d);
  hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(b + 18)))), d);
}

// Q4_K: 256 values in 8 sub-blocks of 32 with 6-bit scales and mins; sub-block j reads bytes 32 (j / 2) .. + 32 of
// qs, low nibbles for even j and high for odd; (d * sc) * q - dmin * mn.
void q4_k(const uint8_t* row, int64_t block, __m512& lo, __m512& hi) {
  const uint8_t* b = row + block / 8 * 144;
  const int j = (int)(block % 8);
  const uint8_t* s = b + 4;
  const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
  const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  const __m512 scale = _mm512_set1_ps(f16_at(b) * (float)sc), min = _mm512_set1_ps(f16_at(b + 2) * (float)mn);
  const uint8_t* q = b + 16 + 32 * (j / 2);
  const int shift = j % 2 == 0 ? 0 : 4;
  const __m512i f = _mm512_set1_epi32(0xF);
  const __m512i q0 = _mm512_and_si512(_mm512_srli_epi32(bytes_as_ints(q), shift), f);
  const __m512i q1 = _mm512_and_si512(_mm512_srli_epi32(bytes_as_ints(q + 16), shift), f);
  lo = _mm512_sub_ps(_mm512_mul_ps(scale, _mm512_cvtepi32_ps(q0)), min);
  hi = _mm512_sub_ps(_mm512_mul_ps(scale, _mm512_cvtepi32_ps(q1)), min);
}

// Q6_K: two halves of 128 values; in a half, value l + 32 k (l < 32) takes 4 low bits from ql (byte l or l + 32,
// low nibble for k < 2) and bits 2k, 2k + 1 of qh[l]; scale sc[l / 16 + 2k]; (d * sc) * (q - 32).
void q6_k(const uint8_t* row, int64_t block, __m512& lo, __m512& hi) {
  const uint8_t* b = row + block / 8 * 210;
  const int half = (int)(block % 8) / 4, k = (int)(block % 4);
  const uint8_t* ql = b + 64 * half + (k % 2 == 1 ? 32 : 0);
  const uint8_t* qh = b + 128 + 32 * half;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * half + 2 * k;
  const float d = f16_at(b + 208);
  const int low_shift = k < 2 ? 0 : 4;
  const __m512i f = _mm512_set1_epi32(0xF), three = _mm512_set1_epi32(3), off = _mm512_set1_epi32(32);
  __m512 out[2];
  for (int h = 0; h < 2; ++h) {
    const __m512i l4 = _mm512_and_si512(_mm512_srli_epi32(bytes_as_ints(ql + 16 * h), low_shift), f);
    const __m512i h2 = _mm512_and_si512(_mm512_srli_epi32(bytes_as_ints(qh + 16 * h), 2 * k), three);
    const __m512i q = _mm512_sub_epi32(_mm512_or_si512(l4, _mm512_slli_epi32(h2, 4)), off);
    out[h] = _mm512_mul_ps(_mm512_set1_ps(d * (float)sc[h]), _mm512_cvtepi32_ps(q));
  }
  lo = out[0];
  hi = out[1];
}

// As pack_rows in gemm_avx512_bf16.cpp, with each column's 32 values of a k step decoded from its blocks.
template <Block32Fn kDecode>
void pack(const uint8_t* const* rows, int cols, int64_t k0, int kc, uint32_t* p) {
  for (int c0 = 0; c0 < kCols; c0 += 16)
    for (int k = 0; k < kc; k += 32) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        if (c0 + i >= cols) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        __m512 lo, hi;
        kDecode(rows[c0 + i], (k0 + k) / 32, lo, hi);
        r[i] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // word j: values 2j and 2j + 1
      }
      transpose_16x16(r);
      for (int j = 0; j < 16; ++j) _mm512_store_si512(p + (k / 2 + j) * kCols + c0, r[j]);
    }
}

// Interleaved weights (interleaved_weights.h): sixteen columns at a time, rows[c] the group's start. A unit's pair
// i of the sixteen columns is already a panel row's layout (word c: values 2i and 2i + 1 of column c); each value
// is q * s (+ min) in f32, as the base format's dequantization computes it, then rounded to bf16.
template <DType T>
void pack_interleaved(const uint8_t* const* rows, int cols, int64_t k0, int kc, uint32_t* p) {
  using F = InterleavedFormat<T>;
  constexpr int64_t block_elems = 32 * F::kUnits;
  // Column scales (one per lane) spread over a pair register's halves: lanes 2c and 2c + 1 take column c.
  const __m512i first_eight = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __m512i last_eight = _mm512_add_epi32(first_eight, _mm512_set1_epi32(8));
  for (int c0 = 0; c0 < kCols; c0 += 16) {
    if (c0 >= cols) {
      for (int j = 0; j < kc / 2; ++j) _mm512_store_si512(p + j * kCols + c0, _mm512_setzero_si512());
      continue;
    }
    for (int k = 0; k < kc; k += 32) {
      const int64_t e = k0 + k;
      const uint8_t* block = rows[c0] + e / block_elems * interleaved_block_bytes<F>();
      const int u = (int)(e % block_elems / 32);
      const UnitScales s = F::scales(block, u);
      __m512i pairs[16];
      widen_interleaved<F>(block + F::kHeader + u * interleaved_unit_bytes<F>(), pairs);
      // The unit's scales spread once: [half][lanes of columns 0-7, of columns 8-15].
      const __m512 scale[2][2] = {
          {_mm512_permutexvar_ps(first_eight, s.s0), _mm512_permutexvar_ps(last_eight, s.s0)},
          {_mm512_permutexvar_ps(first_eight, s.s1), _mm512_permutexvar_ps(last_eight, s.s1)}};
      const __m512 min_lo = _mm512_permutexvar_ps(first_eight, s.min);
      const __m512 min_hi = _mm512_permutexvar_ps(last_eight, s.min);
      for (int i = 0; i < 16; ++i) {
        const __m512* sc = scale[F::kHalves && i >= 8 ? 1 : 0];
        __m512 lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(pairs[i]))), sc[0]);
        __m512 hi =
            _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(pairs[i], 1))), sc[1]);
        if constexpr (F::kMin) {
          lo = _mm512_add_ps(lo, min_lo);
          hi = _mm512_add_ps(hi, min_hi);
        }
        _mm512_store_si512(p + (k / 2 + i) * kCols + c0, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      }
    }
  }
}

}  // namespace

bool pack_quant_panel_bf16_supports(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q8_0 || t == DType::Q4_K || t == DType::Q6_K ||
         t == DType::Q4_1_X16 || t == DType::Q5_0_X16 || t == DType::Q8_0_X16 || t == DType::Q4_K_X16 ||
         t == DType::Q6_K_X16;
}

void pack_quant_panel_bf16(DType t, const uint8_t* const* rows, int cols, int64_t k0, int kc, void* panel) {
  auto* p = static_cast<uint32_t*>(panel);
  switch (t) {
    case DType::Q4_0: return pack<q4_0>(rows, cols, k0, kc, p);
    case DType::Q4_1: return pack<q4_1>(rows, cols, k0, kc, p);
    case DType::Q8_0: return pack<q8_0>(rows, cols, k0, kc, p);
    case DType::Q4_K: return pack<q4_k>(rows, cols, k0, kc, p);
    case DType::Q6_K: return pack<q6_k>(rows, cols, k0, kc, p);
    case DType::Q4_1_X16: return pack_interleaved<DType::Q4_1_X16>(rows, cols, k0, kc, p);
    case DType::Q5_0_X16: return pack_interleaved<DType::Q5_0_X16>(rows, cols, k0, kc, p);
    case DType::Q8_0_X16: return pack_interleaved<DType::Q8_0_X16>(rows, cols, k0, kc, p);
    case DType::Q4_K_X16: return pack_interleaved<DType::Q4_K_X16>(rows, cols, k0, kc, p);
    case DType::Q6_K_X16: return pack_interleaved<DType::Q6_K_X16>(rows, cols, k0, kc, p);
    default: break;
  }
}

}  // namespace kvf::cpu

KVF_ISA_END
#pragma GCC diagnostic pop
