#include "core/half_arrays.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/cpuid.h"
#include "core/half.h"
#include "core/isa_target.h"

namespace kvf {
namespace {

// F16C's conversion is exact (f16 values are all representable in f32), so it matches f16_to_f32 bit for bit
// except that a signalling NaN comes out quiet.
KVF_ISA_BEGIN("avx,f16c")
void f16_to_f32_f16c(const uint8_t* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i))));
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = f16_to_f32(h);
  }
}
KVF_ISA_END

bool has_f16c() {
  static const bool yes = cpu_has_f16c() && __builtin_cpu_supports("avx");
  return yes;
}

}  // namespace

void f16_to_f32_array(const void* in, size_t n, float* out) {
  const uint8_t* bytes = static_cast<const uint8_t*>(in);
  if (has_f16c()) return f16_to_f32_f16c(bytes, n, out);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    out[i] = f16_to_f32(h);
  }
}

void bf16_to_f32_array(const void* in, size_t n, float* out) {
  // A plain loop of shifts: the compiler vectorises it with the baseline instruction set.
  const uint8_t* bytes = static_cast<const uint8_t*>(in);
  for (size_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    const uint32_t bits = (uint32_t)b << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

bool all_finite(const float* x, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    bad |= (uint32_t)((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace kvf
