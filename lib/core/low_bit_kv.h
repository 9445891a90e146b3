// Low-bit KV (KIVI's grouping): 4, 3 or 2 bits per value, K quantized per channel over groups of `group` consecutive
// rows (tokens) and V per row over groups of `group` consecutive values of a head; a chunk's first `keep_first` rows
// (attention sinks) stay f16 and are left out of K's groups.
//
// Uniform levels (K always; V unless v_levels is nf), for a group with minimum lo and maximum hi, an f16 scale and
// minimum:
//   min   = the largest f16 value <= lo
//   scale = the smallest f16 value >= (hi - min) / (2^bits - 1)   (0 when hi == min)
//   q     = clamp(round-to-nearest-even((x - min) / scale), 0, 2^bits - 1)
//   x'    = min + q * scale
// Guarantee: |x - x'| <= scale / 2 plus f32 rounding, i.e. about (hi - lo) / (2 * (2^bits - 1)).
// nf levels (V with v_levels nf): one f16 scale per group, the smallest f16 >= the group's largest |x|; q is the
// nearest of the 2^bits normal-quantile levels of core/hadamard.h to x / scale (a tie to the lower), x' = level[q] *
// scale (an all-zero group: scale 0, q the lowest positive level, x' = +0).
// With `rotate`, every row's head vectors (head_dim values, a power of 2) are rotated by the normalized
// Walsh-Hadamard transform H / sqrt(head_dim) before quantizing and rotated back when decoded; kept rows are stored
// as they are (f16, not rotated). The rotation spreads a head's outlier channels over all its values, so the
// groups' ranges shrink, at no cost in bits (docs/results/kv_quantizer_study.md).
//
// One chunk's encoding is one byte string (the shards' `blob`, docs/store.md), in this order: the kept rows' K
// then V (f16), K's (scale, min) per group and value, V's (scale, min) per row and group (nf: the scale alone),
// then K's and V's codes packed row by row as one little-endian bit string per row, lowest bits first (a 3-bit
// code may straddle two bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

enum class LowBitLevels : uint8_t { Uniform, NormalFloat };

struct LowBitSpec {
  int bits = 4;        // 4, 3 or 2
  int group = 32;      // rows per K group, values per V group (must divide the head dimension; 3 bits: a multiple of 8)
  int keep_first = 0;  // leading rows kept in f16
  bool rotate = false;                            // Hadamard rotation of every head vector (K and V)
  LowBitLevels v_levels = LowBitLevels::Uniform;  // V's levels (K's are always uniform)
  int head_dim = 0;    // with rotate: the head dimension the rotation works on (a power of 2)
};

const char* low_bit_levels_name(LowBitLevels levels);  // "uniform", "nf"

// Throws kvf::Error naming `where` when the spec does not fit rows of heads of head_dim values (with rotate: a
// head_dim that is not a power of 2, or a spec.head_dim other than head_dim).
void check_low_bit_spec(const LowBitSpec& spec, int64_t head_dim, const std::string& where);

// Bytes of one chunk of `rows` rows of `width` values (K and V together).
uint64_t low_bit_chunk_bytes(const LowBitSpec& spec, int64_t rows, int64_t width);

// k, v: [rows, width] f32, width a multiple of spec.group. Appends the chunk's bytes to `out`. Throws kvf::Error
// naming the tensor, row and value for a non-finite value or one beyond f16's range.
void encode_low_bit_chunk(const LowBitSpec& spec, const float* k, const float* v, int64_t rows, int64_t width,
                          std::vector<uint8_t>& out);

// The inverse; `bytes` holds low_bit_chunk_bytes(spec, rows, width) bytes. Returns false when a stored scale or
// minimum is not finite (damage: the caller names the chunk), leaving k and v unspecified.
bool decode_low_bit_chunk(const LowBitSpec& spec, const uint8_t* bytes, int64_t rows, int64_t width, float* k,
                          float* v);

// Part of the inverse, for a reader that wants a few rows of one stored layer without the rest: rows
// rows[0..n) of the chunk (each in [0, chunk_rows), ascending for speed) and of each the values
// [offset, offset + count) (multiples of spec.group; with rotate, of spec.head_dim: whole heads), into k and v as [n, count] f32: exactly the values
// decode_low_bit_chunk gives there. Returns false, as it does, on a scale or minimum that is not finite.
bool decode_low_bit_rows(const LowBitSpec& spec, const uint8_t* bytes, int64_t chunk_rows, int64_t width,
                         int64_t offset, int64_t count, const int32_t* rows, int64_t n, float* k, float* v);

// The codes (0 .. 2^bits - 1) of every value of the chunk, K's and V's as [rows, width] each (kept rows included:
// they carry codes too), as the chunk stores them: what an entropy coder over the codes would see.
void low_bit_codes(const LowBitSpec& spec, const uint8_t* bytes, int64_t rows, int64_t width, uint8_t* k_codes,
                   uint8_t* v_codes);

// Whether every kept f16 value, scale and minimum (nf: scale) of the chunk is finite: then so is every value it decodes to.
bool low_bit_chunk_finite(const LowBitSpec& spec, const uint8_t* bytes, int64_t rows, int64_t width);

}  // namespace kvf
