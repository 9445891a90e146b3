// Candidate KV quantizers for a study of smaller stored KV (docs/compress.md, "Candidates for 8x: the study"): pure
// functions over one chunk's K or V of one stored layer ([rows, kv_heads * head_dim] f32) that give the values a
// reader would get back and the exact bits the codec would store. Nothing here is a store format.
//
// Codecs (each keeps KIVI's grouping: K per channel over groups of `group` rows, V per row over groups of `group`
// values of a head; the first `keep_first` rows stay f16 and, as in core/low_bit_kv, still carry codes):
//   uniform   core/low_bit_kv's codec itself (f16 scale and minimum per group).
//   hadamard  each row's head vectors rotated by the normalized Walsh-Hadamard transform H / sqrt(head_dim)
//             (with `signs`: after a fixed random sign per channel, H D / sqrt(head_dim)), then the uniform codec,
//             then rotated back. The rotation is fixed, so it costs no bits.
//   nf        normal-quantile levels: level i of 2^bits is the standard normal's quantile at (i + 0.5) / 2^bits,
//             divided by the largest so the levels span [-1, 1]; each group stores one f16 scale (the smallest
//             f16 >= its largest |x|) and each value the nearest level times it.
//   hnf       the hadamard rotation (with `signs`: signs too), then nf, then rotated back.
//   fit       data-fit levels (KVQuant's non-uniform levels per channel, unweighted): each group keeps an f16
//             minimum and half range (32 bits, as uniform's minimum and scale), which map its values onto
//             [-1, 1], and each value becomes
//             the nearest of its channel's 2^bits levels, fitted to calibration chunks (compress/kv_fitted_levels.h;
//             the levels are per store layer, 2^bits f16 values a channel, and are not counted in a chunk's bits).
//   hfit      the hadamard rotation, then fit, then rotated back.
// Outliers (uniform and nf): the ceil(p * n) values of largest |x| of each group (`/group`) or of the whole matrix
// (`/chunk`) are kept as f16 values with 16-bit indices (32-bit when the group or matrix holds more than 65,536
// values), the chunk scope adding a 32-bit count; the codec quantizes the rest (an outlier is clamped into its
// group's range of the other values before quantizing, so it widens no range), and the outliers are written back.
//
// Text form (kvf_kv_quantizer_study --codec): CODEC:BITS:GROUP[:signs][:keep=N][:out=P/group|:out=P/chunk], P in
// percent, e.g. "uniform:4:32", "hadamard:2:64:signs", "nf:3:64:out=1/group", "hfit:2:64". fit and hfit keep no
// rows and no outliers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compress/kv_fitted_levels.h"
#include "core/hadamard.h"

namespace kvf {

enum class KvQuantCodec { Uniform, Hadamard, NormalFloat, HadamardNormalFloat, Fit, HadamardFit };
enum class KvOutlierScope { None, Group, Chunk };
enum class KvMatrix { Key, Value };  // K: groups of rows per channel; V: groups of values per row

struct KvQuantizerSpec {
  KvQuantCodec codec = KvQuantCodec::Uniform;
  int bits = 4;                // 2, 3 or 4
  int group = 32;              // rows per K group, values per V group
  int keep_first = 0;          // leading rows kept in f16
  bool signs = false;          // hadamard, hnf, hfit: a fixed random sign per channel before the transform
  KvOutlierScope outliers = KvOutlierScope::None;
  double outlier_percent = 0;  // (0, 50]
};

// Parses the text form above; throws kvf::Error naming the text and the fault.
KvQuantizerSpec parse_kv_quantizer(const std::string& text);
// The text form of a spec (parse_kv_quantizer(kv_quantizer_name(s)) == s).
std::string kv_quantizer_name(const KvQuantizerSpec& spec);
// Throws kvf::Error naming `where` when the spec does not fit heads of head_dim values.
void check_kv_quantizer(const KvQuantizerSpec& spec, int64_t head_dim, const std::string& where);

// The nf levels and the Hadamard rotation (normal_float_levels, hadamard_rows, inverse_hadamard_rows,
// kv_hadamard_sign) are core/hadamard.h's, shared with the store's rotated codec (core/low_bit_kv.h).

// Outliers the spec keeps in a matrix of `rows` rows of `width` values.
int64_t kv_quantizer_outliers(const KvQuantizerSpec& spec, KvMatrix matrix, int64_t rows, int64_t width);
// Bits the spec stores for the matrix: codes, group parameters, kept rows and outliers with their indices.
uint64_t kv_quantizer_bits(const KvQuantizerSpec& spec, KvMatrix matrix, int64_t rows, int64_t width);

struct KvQuantized {
  std::vector<float> values;  // [rows, width]: what a reader gets back
  std::vector<uint8_t> codes;  // [rows, width]: each value's level index, what an entropy coder would code
  uint64_t bits = 0;          // kv_quantizer_bits
  int64_t outliers = 0;
};

// Whether the spec's codec needs fitted levels (fit, hfit).
bool kv_quantizer_is_fitted(const KvQuantizerSpec& spec);

// x: [rows, width] f32 (width a multiple of head_dim, finite, within f16's range). `levels`: the fitted levels of
// this layer and matrix for fit and hfit (their bits and width the spec's and x's), unused by the other codecs.
// Throws kvf::Error for a spec that does not fit (check_kv_quantizer), missing levels or a value the codec refuses.
KvQuantized quantize_kv_matrix(const KvQuantizerSpec& spec, KvMatrix matrix, const float* x, int64_t rows,
                               int64_t width, int64_t head_dim, const KvFittedLevels* levels = nullptr);

// Calibration for fit and hfit: hands every value of x, as that codec normalizes it (rotated for hfit, then mapped
// onto [-1, 1] by its group's f16 minimum and scale), to `fitter` under its channel. The fitter's bits and width
// must be the spec's and x's.
void add_kv_calibration(const KvQuantizerSpec& spec, KvMatrix matrix, const float* x, int64_t rows, int64_t width,
                        int64_t head_dim, KvLevelFitter& fitter);

}  // namespace kvf
