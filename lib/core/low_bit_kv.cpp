#include "core/low_bit_kv.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/hadamard.h"
#include "core/half.h"

namespace kvf {
namespace {

bool nf_values(const LowBitSpec& s) { return s.v_levels == LowBitLevels::NormalFloat; }
int64_t v_param_bytes(const LowBitSpec& s) { return nf_values(s) ? 2 : 4; }  // (scale, min) or the scale alone

struct Parts {  // byte offsets of one chunk's parts
  int64_t kept, k_groups, v_groups, codes_bytes;
  uint64_t kept_k, kept_v, k_params, v_params, k_codes, v_codes, end;
};

Parts parts_of(const LowBitSpec& s, int64_t rows, int64_t width) {
  Parts p;
  p.kept = std::min<int64_t>(s.keep_first, rows);
  p.k_groups = (rows - p.kept + s.group - 1) / s.group;
  p.v_groups = width / s.group;
  p.codes_bytes = width * s.bits / 8;
  p.kept_k = 0;
  p.kept_v = p.kept_k + (uint64_t)(p.kept * width * 2);
  p.k_params = p.kept_v + (uint64_t)(p.kept * width * 2);
  p.v_params = p.k_params + (uint64_t)(p.k_groups * width * 4);
  p.k_codes = p.v_params + (uint64_t)(rows * p.v_groups * v_param_bytes(s));
  p.v_codes = p.k_codes + (uint64_t)(rows * p.codes_bytes);
  p.end = p.v_codes + (uint64_t)(rows * p.codes_bytes);
  return p;
}

void put16(std::vector<uint8_t>& out, uint64_t at, uint16_t h) { std::memcpy(out.data() + at, &h, 2); }
uint16_t get16(const uint8_t* in, uint64_t at) {
  uint16_t h;
  std::memcpy(&h, in + at, 2);
  return h;
}

// (scale, min) of the values x[0], x[stride], ... (n of them) as f16 bits.
std::pair<uint16_t, uint16_t> group_params(const float* x, int64_t n, int64_t stride, int bits) {
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) lo = std::min(lo, x[i * stride]), hi = std::max(hi, x[i * stride]);
  const uint16_t mn = f16_at_most(lo);
  const float span = hi - f16_to_f32(mn);
  const uint16_t scale = span > 0 ? f16_at_least(span / (float)((1 << bits) - 1)) : 0;
  return {scale, mn};
}

uint8_t code_of(float x, float scale, float mn, int bits) {
  if (scale == 0) return 0;
  const float q = std::nearbyint((x - mn) / scale);
  return (uint8_t)std::clamp(q, 0.0f, (float)((1 << bits) - 1));
}

// Value i of a row takes bits [i * bits, (i + 1) * bits) of the row's bytes read as one little-endian bit string;
// a 3-bit code may straddle two bytes.
void pack(uint8_t* row, int64_t i, uint8_t code, int bits) {
  const int64_t at = i * bits;
  const int shift = (int)(at % 8);
  row[at / 8] |= (uint8_t)(code << shift);
  if (shift + bits > 8) row[at / 8 + 1] |= (uint8_t)(code >> (8 - shift));
}

// One row's codes as floats, lowest bits first (the shifts and mask known at compile time, so the loops
// vectorise): 4 and 2 bits a byte at a time, 3 bits eight codes from each 3 bytes.
template <int kBits>
void unpack_codes(const uint8_t* row, int64_t width, float* codes) {
  constexpr int kMask = (1 << kBits) - 1;
  if constexpr (8 % kBits == 0) {
    constexpr int kPer = 8 / kBits;
    for (int64_t b = 0; b < width / kPer; ++b)
      for (int j = 0; j < kPer; ++j) codes[b * kPer + j] = (float)((row[b] >> (kBits * j)) & kMask);
  } else {
    for (int64_t b = 0; b < width / 8; ++b) {
      uint32_t word = 0;
      for (int j = 0; j < kBits; ++j) word |= (uint32_t)row[b * kBits + j] << (8 * j);
      for (int j = 0; j < 8; ++j) codes[b * 8 + j] = (float)((word >> (kBits * j)) & kMask);
    }
  }
}

void require_encodable(const float* x, int64_t rows, int64_t width, const char* name) {
  for (int64_t i = 0; i < rows * width; ++i)
    KVF_CHECK(std::isfinite(x[i]) && std::abs(x[i]) <= 65504.0f, "low-bit KV: ", name, " of row ", i / width,
              ", value ", i % width, " is ", x[i], "; it must be finite and within f16's range");
}

// The nf code of x in a group of f16 scale `scale` (0: the all-zero group, which decodes to +0).
uint8_t nf_code_of(float x, float scale, const std::vector<float>& levels) {
  if (scale == 0) return (uint8_t)(levels.size() / 2);  // the lowest positive level: level * 0 = +0
  return (uint8_t)nearest_level(levels, x / scale);
}

}  // namespace

const char* low_bit_levels_name(LowBitLevels levels) {
  return levels == LowBitLevels::NormalFloat ? "nf" : "uniform";
}

void check_low_bit_spec(const LowBitSpec& s, int64_t head_dim, const std::string& where) {
  KVF_CHECK(s.bits == 4 || s.bits == 3 || s.bits == 2, where, ": ", s.bits, " bits; low-bit KV has 4, 3 or 2");
  KVF_CHECK(s.group >= 4 && s.group <= 4096 && head_dim % s.group == 0, where, ": group size ", s.group,
            " must be 4..4096 and divide the head dimension ", head_dim);
  // Eight 3-bit codes fill 3 bytes: a row's codes end on a byte when its groups hold multiples of 8 values.
  KVF_CHECK(s.bits != 3 || s.group % 8 == 0, where, ": group size ", s.group, " must be a multiple of 8 for 3 bits");
  KVF_CHECK(s.keep_first >= 0 && s.keep_first <= 1 << 20, where, ": keep-first ", s.keep_first,
            " is outside 0..", 1 << 20);
  KVF_CHECK(s.v_levels == LowBitLevels::Uniform || s.v_levels == LowBitLevels::NormalFloat, where,
            ": unknown V levels ", (int)s.v_levels);
  KVF_CHECK(!s.rotate || is_power_of_two(head_dim), where, ": the Hadamard rotation needs a head dimension that is a "
            "power of 2, not ", head_dim);
  KVF_CHECK(!s.rotate || s.head_dim == head_dim, where, ": the rotation's head dimension ", s.head_dim,
            " is not the KV's ", head_dim);
}

uint64_t low_bit_chunk_bytes(const LowBitSpec& s, int64_t rows, int64_t width) { return parts_of(s, rows, width).end; }

void encode_low_bit_chunk(const LowBitSpec& s, const float* k, const float* v, int64_t rows, int64_t width,
                          std::vector<uint8_t>& out) {
  require_encodable(k, rows, width, "k");
  require_encodable(v, rows, width, "v");
  // The kept rows are stored from k and v as given; the codes from their rotated copies.
  std::vector<float> k_rotated, v_rotated;
  const float* kq = k;
  const float* vq = v;
  if (s.rotate) {
    k_rotated.assign(k, k + rows * width);
    v_rotated.assign(v, v + rows * width);
    hadamard_rows(k_rotated.data(), rows, width, s.head_dim);
    hadamard_rows(v_rotated.data(), rows, width, s.head_dim);
    require_encodable(k_rotated.data(), rows, width, "k (Hadamard-rotated)");
    require_encodable(v_rotated.data(), rows, width, "v (Hadamard-rotated)");
    kq = k_rotated.data();
    vq = v_rotated.data();
  }
  const Parts p = parts_of(s, rows, width);
  const uint64_t base = out.size();
  out.resize(base + p.end, 0);
  std::vector<uint8_t> chunk(p.end, 0);
  for (int64_t i = 0; i < p.kept * width; ++i) {
    put16(chunk, p.kept_k + 2 * i, f32_to_f16(k[i]));
    put16(chunk, p.kept_v + 2 * i, f32_to_f16(v[i]));
  }
  // K: each value (column) of each group of rows after the kept ones.
  for (int64_t g = 0; g < p.k_groups; ++g) {
    const int64_t first = p.kept + g * s.group, n = std::min<int64_t>(s.group, rows - first);
    for (int64_t c = 0; c < width; ++c) {
      const auto [scale, mn] = group_params(kq + first * width + c, n, width, s.bits);
      put16(chunk, p.k_params + 4 * (g * width + c), scale);
      put16(chunk, p.k_params + 4 * (g * width + c) + 2, mn);
      for (int64_t r = first; r < first + n; ++r)
        pack(chunk.data() + p.k_codes + r * p.codes_bytes, c,
             code_of(kq[r * width + c], f16_to_f32(scale), f16_to_f32(mn), s.bits), s.bits);
    }
  }
  // V: each group of values within each row (the kept rows too: their codes are unused but cheap).
  const std::vector<float>* levels = nf_values(s) ? &normal_float_levels_cached(s.bits) : nullptr;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < p.v_groups; ++g) {
      const float* x = vq + r * width + g * s.group;
      if (levels) {  // nf: one scale, the smallest f16 >= the group's largest |x|
        float amax = 0;
        for (int64_t i = 0; i < s.group; ++i) amax = std::max(amax, std::fabs(x[i]));
        const uint16_t scale = f16_at_least(amax);
        put16(chunk, p.v_params + 2 * (r * p.v_groups + g), scale);
        for (int64_t i = 0; i < s.group; ++i)
          pack(chunk.data() + p.v_codes + r * p.codes_bytes, g * s.group + i,
               nf_code_of(x[i], f16_to_f32(scale), *levels), s.bits);
        continue;
      }
      const auto [scale, mn] = group_params(x, s.group, 1, s.bits);
      put16(chunk, p.v_params + 4 * (r * p.v_groups + g), scale);
      put16(chunk, p.v_params + 4 * (r * p.v_groups + g) + 2, mn);
      for (int64_t i = 0; i < s.group; ++i)
        pack(chunk.data() + p.v_codes + r * p.codes_bytes, g * s.group + i,
             code_of(x[i], f16_to_f32(scale), f16_to_f32(mn), s.bits), s.bits);
    }
  std::copy(chunk.begin(), chunk.end(), out.begin() + (long)base);
}

bool decode_low_bit_chunk(const LowBitSpec& s, const uint8_t* in, int64_t rows, int64_t width, float* k, float* v) {
  std::vector<int32_t> all((size_t)rows);
  for (int64_t r = 0; r < rows; ++r) all[(size_t)r] = (int32_t)r;
  return decode_low_bit_rows(s, in, rows, width, 0, width, all.data(), rows, k, v);
}

bool decode_low_bit_rows(const LowBitSpec& s, const uint8_t* in, int64_t chunk_rows, int64_t width, int64_t offset,
                         int64_t count, const int32_t* rows, int64_t n, float* k, float* v) {
  KVF_CHECK(offset >= 0 && count >= 0 && offset + count <= width && offset % s.group == 0 && count % s.group == 0,
            "low-bit KV: values [", offset, ", ", offset + count, ") of rows of ", width, " are not whole groups of ",
            s.group);
  KVF_CHECK(!s.rotate || (s.head_dim > 0 && offset % s.head_dim == 0 && count % s.head_dim == 0),
            "low-bit KV: values [", offset, ", ", offset + count, ") are not whole heads of ", s.head_dim,
            ", which the rotation needs");
  const std::vector<float>* levels = nf_values(s) ? &normal_float_levels_cached(s.bits) : nullptr;
  const Parts p = parts_of(s, chunk_rows, width);
  // Codes of the values asked for start on a byte: offset is a multiple of the group, and a group's codes fill
  // whole bytes (check_low_bit_spec).
  const int64_t code_from = offset * s.bits / 8;
  // Called per layer and segment in every forward pass: the buffers are kept per thread, not allocated each time.
  thread_local std::vector<float> scale, mn, codes;
  scale.resize((size_t)count);
  mn.resize((size_t)count);
  codes.resize((size_t)count);
  const auto unpack = [&](const uint8_t* row) {
    switch (s.bits) {
      case 4: return unpack_codes<4>(row + code_from, count, codes.data());
      case 3: return unpack_codes<3>(row + code_from, count, codes.data());
      default: return unpack_codes<2>(row + code_from, count, codes.data());
    }
  };
  // With the rotation: output rows [run, i) hold decoded rows still in the rotated basis, rotated back together
  // (several heads at a time) when a kept row or the end closes the run.
  int64_t run = 0;
  const auto rotate_back = [&](int64_t end) {
    if (s.rotate && end > run) {
      inverse_hadamard_rows(k + run * count, end - run, count, s.head_dim);
      inverse_hadamard_rows(v + run * count, end - run, count, s.head_dim);
    }
  };
  int64_t k_group = -1;  // the K group whose parameters `scale` and `mn` hold
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[i];
    KVF_CHECK(r >= 0 && r < chunk_rows, "low-bit KV: row ", r, " outside [0, ", chunk_rows, ")");
    float* k_out = k + i * count;
    float* v_out = v + i * count;
    if (r < p.kept) {  // kept rows never left the original basis
      rotate_back(i);
      run = i + 1;
      for (int64_t c = 0; c < count; ++c) {
        k_out[c] = f16_to_f32(get16(in, p.kept_k + 2 * (r * width + offset + c)));
        v_out[c] = f16_to_f32(get16(in, p.kept_v + 2 * (r * width + offset + c)));
      }
      continue;
    }
    // K: per channel, the parameters of the row's group of rows (read once while rows stay in one group).
    const int64_t g = (r - p.kept) / s.group;
    if (g != k_group) {
      for (int64_t c = 0; c < count; ++c) {
        const uint64_t at = p.k_params + 4 * (g * width + offset + c);
        scale[(size_t)c] = f16_to_f32(get16(in, at));
        mn[(size_t)c] = f16_to_f32(get16(in, at + 2));
        if (!std::isfinite(scale[(size_t)c]) || !std::isfinite(mn[(size_t)c])) return false;
      }
      k_group = g;
    }
    unpack(in + p.k_codes + r * p.codes_bytes);
    for (int64_t c = 0; c < count; ++c) k_out[c] = mn[(size_t)c] + codes[(size_t)c] * scale[(size_t)c];
    // V: per row, groups of values.
    unpack(in + p.v_codes + r * p.codes_bytes);
    for (int64_t vg = 0; vg < count / s.group; ++vg) {
      const int64_t group_at = r * p.v_groups + offset / s.group + vg;
      if (levels) {
        const float sc = f16_to_f32(get16(in, p.v_params + 2 * group_at));
        if (!std::isfinite(sc)) return false;
        for (int64_t c = vg * s.group; c < (vg + 1) * s.group; ++c)
          v_out[c] = (*levels)[(size_t)codes[(size_t)c]] * sc;
        continue;
      }
      const uint64_t at = p.v_params + 4 * group_at;
      const float sc = f16_to_f32(get16(in, at)), m = f16_to_f32(get16(in, at + 2));
      if (!std::isfinite(sc) || !std::isfinite(m)) return false;
      for (int64_t c = vg * s.group; c < (vg + 1) * s.group; ++c) v_out[c] = m + codes[(size_t)c] * sc;
    }
  }
  rotate_back(n);
  return true;
}

void low_bit_codes(const LowBitSpec& s, const uint8_t* in, int64_t rows, int64_t width, uint8_t* k_codes,
                   uint8_t* v_codes) {
  const Parts p = parts_of(s, rows, width);
  const int mask = (1 << s.bits) - 1;
  const auto row_codes = [&](uint64_t from, uint8_t* out) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < width; ++i) {  // bits [i * bits, (i + 1) * bits) of the row's little-endian string
        const int64_t at = i * s.bits;
        const uint8_t* row = in + from + r * p.codes_bytes;
        uint32_t two = row[at / 8];
        if (at % 8 + s.bits > 8) two |= (uint32_t)row[at / 8 + 1] << 8;
        out[r * width + i] = (uint8_t)((two >> (at % 8)) & (uint32_t)mask);
      }
  };
  row_codes(p.k_codes, k_codes);
  row_codes(p.v_codes, v_codes);
}

bool low_bit_chunk_finite(const LowBitSpec& s, const uint8_t* in, int64_t rows, int64_t width) {
  const Parts p = parts_of(s, rows, width);
  for (uint64_t at = p.kept_k; at < p.k_codes; at += 2)  // kept rows, then every (scale, min) or scale: all f16
    if (!std::isfinite(f16_to_f32(get16(in, at)))) return false;
  return true;
}

}  // namespace kvf
