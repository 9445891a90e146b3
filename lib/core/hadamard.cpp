#include "core/hadamard.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kvf {
namespace {

// The butterflies of stage `len`: x[j], x[j + len] -> their sum and difference. Every stage's outputs are exact
// functions of its inputs, so any order within a stage gives the same bits.
template <int64_t kLen>
void butterflies(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += kLen << 1)
    for (int64_t j = i; j < i + kLen; ++j) {
      const float a = x[j], b = x[j + kLen];
      x[j] = a + b;
      x[j + kLen] = a - b;
    }
}

// In place, unnormalized. The three narrowest stages run per block of 8 (unrolled: the decoder runs this on every
// low-bit row it reads, twice per head); the wider stages' inner loops are contiguous and vectorise. The same
// butterflies as the plain triple loop, stage by stage, so the same bits.
void fwht(float* x, int64_t n) {
  int64_t len = 1;
  if (n >= 8) {
    for (int64_t b = 0; b < n; b += 8) {
      butterflies<1>(x + b, 8);
      butterflies<2>(x + b, 8);
      butterflies<4>(x + b, 8);
    }
    len = 8;
  }
  for (; len < n; len <<= 1) {
    switch (len) {  // the stride known at compile time: the loads and stores of a stage do not overlap
      case 8: butterflies<8>(x, n); break;
      case 16: butterflies<16>(x, n); break;
      case 32: butterflies<32>(x, n); break;
      case 64: butterflies<64>(x, n); break;
      default:
        for (int64_t i = 0; i < n; i += len << 1)
          for (int64_t j = i; j < i + len; ++j) {
            const float a = x[j], b = x[j + len];
            x[j] = a + b;
            x[j + len] = a - b;
          }
    }
  }
}

void rotate(float* x, int64_t rows, int64_t width, int64_t head_dim, bool signs, bool inverse) {
  KVF_CHECK(is_power_of_two(head_dim) && width % head_dim == 0, "Hadamard rotation: rows of ", width,
            " values are not heads of a power-of-2 head dimension (", head_dim, ")");
  const float norm = 1.0f / std::sqrt((float)head_dim);
  for (int64_t h = 0; h < rows * (width / head_dim); ++h) {
    float* v = x + h * head_dim;
    if (signs && !inverse)
      for (int64_t c = 0; c < head_dim; ++c) v[c] *= kv_hadamard_sign(c);
    fwht(v, head_dim);
    for (int64_t c = 0; c < head_dim; ++c) v[c] *= norm;
    if (signs && inverse)
      for (int64_t c = 0; c < head_dim; ++c) v[c] *= kv_hadamard_sign(c);
  }
}

// The standard normal's quantile at p (bisection on erfc; exact enough for level tables).
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

void hadamard_rows(float* x, int64_t rows, int64_t width, int64_t head_dim, bool signs) {
  rotate(x, rows, width, head_dim, signs, false);
}
void inverse_hadamard_rows(float* x, int64_t rows, int64_t width, int64_t head_dim, bool signs) {
  rotate(x, rows, width, head_dim, signs, true);
}

float kv_hadamard_sign(int64_t c) {
  uint64_t z = (uint64_t)c + 0x9E3779B97F4A7C15ull;  // splitmix64 of the channel
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z & 1) ? -1.0f : 1.0f;
}

std::vector<float> normal_float_levels(int bits) {
  KVF_CHECK(bits >= 1 && bits <= 8, "nf levels: ", bits, " bits; expected 1..8");
  const int n = 1 << bits;
  std::vector<float> out((size_t)n);
  const double top = normal_quantile((n - 0.5) / n);
  for (int i = 0; i < n; ++i) out[(size_t)i] = (float)(normal_quantile((i + 0.5) / n) / top);
  out.front() = -1.0f;
  out.back() = 1.0f;
  return out;
}

const std::vector<float>& normal_float_levels_cached(int bits) {
  static const std::vector<float> two = normal_float_levels(2), three = normal_float_levels(3),
                                  four = normal_float_levels(4);
  KVF_CHECK(bits >= 2 && bits <= 4, "nf levels: ", bits, " bits; the cached tables hold 2, 3 and 4");
  return bits == 2 ? two : bits == 3 ? three : four;
}

int nearest_level(const float* levels, int n, float t) {
  const float* it = std::lower_bound(levels, levels + n, t);
  if (it == levels + n) return n - 1;
  if (it != levels && t - *(it - 1) <= *it - t) return (int)(it - levels) - 1;
  return (int)(it - levels);
}

int nearest_level(const std::vector<float>& levels, float t) {
  return nearest_level(levels.data(), (int)levels.size(), t);
}

}  // namespace kvf
