#include "compress/kv_quantizers.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/half.h"
#include "core/hadamard.h"
#include "core/low_bit_kv.h"

namespace kvf {
namespace {

LowBitSpec low_bit_of(const KvQuantizerSpec& s) { return {s.bits, s.group, s.keep_first}; }

// Groups of a matrix in the codec's layout: K per channel over groups of rows after the kept ones, V per row
// (every row, kept ones included, as core/low_bit_kv stores them) over groups of values.
struct Grouping {
  int64_t kept, groups, size;  // kept rows; number of groups; values in a full group
};
Grouping grouping_of(const KvQuantizerSpec& s, KvMatrix m, int64_t rows, int64_t width) {
  const int64_t kept = std::min<int64_t>(s.keep_first, rows);
  if (m == KvMatrix::Key) return {kept, (rows - kept + s.group - 1) / s.group * width, s.group};
  return {kept, rows * (width / s.group), s.group};
}

// Calls f(index) for every value of group g (K groups: channel-major within a block of rows).
template <class F>
void for_group(const KvQuantizerSpec& s, KvMatrix m, int64_t rows, int64_t width, int64_t g, F f) {
  const int64_t kept = std::min<int64_t>(s.keep_first, rows);
  if (m == KvMatrix::Key) {
    const int64_t block = g / width, c = g % width;
    const int64_t r0 = kept + block * s.group, r1 = std::min<int64_t>(rows, r0 + s.group);
    for (int64_t r = r0; r < r1; ++r) f(r * width + c);
  } else {
    const int64_t per_row = width / s.group;
    const int64_t r = g / per_row, c0 = (g % per_row) * s.group;
    for (int64_t c = c0; c < c0 + s.group; ++c) f(r * width + c);
  }
}

int64_t values_in_group(const KvQuantizerSpec& s, KvMatrix m, int64_t rows, int64_t g, int64_t width) {
  if (m == KvMatrix::Value) return s.group;
  const int64_t kept = std::min<int64_t>(s.keep_first, rows);
  const int64_t r0 = kept + (g / width) * s.group;
  return std::min<int64_t>(rows, r0 + s.group) - r0;
}

int64_t kept_of(double percent, int64_t n) {
  return std::min<int64_t>(n, (int64_t)std::ceil(percent / 100.0 * (double)n - 1e-9));
}
uint64_t index_bits(int64_t n) { return n <= 65536 ? 16 : 32; }

// The low-bit codec over one matrix (it encodes K and V together: the matrix goes in both places).
void uniform_round_trip(const KvQuantizerSpec& s, KvMatrix m, const float* x, int64_t rows, int64_t width,
                        KvQuantized& out) {
  std::vector<uint8_t> bytes;
  encode_low_bit_chunk(low_bit_of(s), x, x, rows, width, bytes);
  const size_t n = (size_t)(rows * width);
  std::vector<float> k(n), v(n);
  KVF_CHECK(decode_low_bit_chunk(low_bit_of(s), bytes.data(), rows, width, k.data(), v.data()),
            "kv quantizer ", kv_quantizer_name(s), ": a group's scale or minimum is not finite");
  std::vector<uint8_t> k_codes(n), v_codes(n);
  low_bit_codes(low_bit_of(s), bytes.data(), rows, width, k_codes.data(), v_codes.data());
  out.values = m == KvMatrix::Key ? std::move(k) : std::move(v);
  out.codes = m == KvMatrix::Key ? std::move(k_codes) : std::move(v_codes);
}

void normal_float_round_trip(const KvQuantizerSpec& s, KvMatrix m, const float* x, int64_t rows, int64_t width,
                             KvQuantized& out) {
  const std::vector<float> levels = normal_float_levels(s.bits);
  out.values.assign((size_t)(rows * width), 0.0f);
  out.codes.assign((size_t)(rows * width), (uint8_t)(levels.size() / 2));  // an all-zero group's code
  const Grouping gr = grouping_of(s, m, rows, width);
  for (int64_t g = 0; g < gr.groups; ++g) {
    float amax = 0;
    for_group(s, m, rows, width, g, [&](int64_t i) { amax = std::max(amax, std::fabs(x[i])); });
    KVF_CHECK(std::isfinite(amax) && amax <= 65504.0f, "kv quantizer ", kv_quantizer_name(s),
              ": a value is not finite or beyond f16's range");
    const float scale = f16_to_f32(f16_at_least(amax));
    if (scale == 0) continue;
    for_group(s, m, rows, width, g, [&](int64_t i) {
      const int q = nearest_level(levels, x[i] / scale);
      out.codes[(size_t)i] = (uint8_t)q;
      out.values[(size_t)i] = levels[(size_t)q] * scale;
    });
  }
}

// The fit codec's parameters of a group with values in [lo, hi]: an f16 minimum not above lo and an f16 half range
// not below (hi - minimum) / 2, so every value maps into [-1, 1] (up to the division's rounding, clamped).
struct FitGroup {
  float lo, half;
  float normalized(float x) const { return half > 0 ? std::clamp((x - lo) / half - 1.0f, -1.0f, 1.0f) : 0.0f; }
};
FitGroup fit_group(const KvQuantizerSpec& s, float lo, float hi) {
  KVF_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo >= -65504.0f && hi <= 65504.0f, "kv quantizer ",
            kv_quantizer_name(s), ": a value is not finite or beyond f16's range");
  const float min = f16_to_f32(f16_at_most(lo));
  return {min, f16_to_f32(f16_at_least((hi - min) / 2))};
}

// The fit codec over one matrix: each group's values normalized (FitGroup), then handed to `fitter` (calibration)
// and/or, with `out`, replaced by the nearest of their channel's `levels` mapped back (the round trip).
void fit_pass(const KvQuantizerSpec& s, KvMatrix m, const float* x, int64_t rows, int64_t width,
              const KvFittedLevels* levels, KvLevelFitter* fitter, KvQuantized* out) {
  const int n = 1 << s.bits;
  if (out) {
    out->values.assign((size_t)(rows * width), 0.0f);
    out->codes.assign((size_t)(rows * width), 0);
  }
  const Grouping gr = grouping_of(s, m, rows, width);
  for (int64_t g = 0; g < gr.groups; ++g) {
    float lo = INFINITY, hi = -INFINITY;
    for_group(s, m, rows, width, g, [&](int64_t i) { lo = std::min(lo, x[i]), hi = std::max(hi, x[i]); });
    const FitGroup fg = fit_group(s, lo, hi);
    for_group(s, m, rows, width, g, [&](int64_t i) {
      const int64_t c = i % width;
      const float t = fg.normalized(x[i]);
      if (fitter) fitter->add(c, t);
      if (!out) return;
      const float* channel_levels = levels->of(c);
      const int q = nearest_level(channel_levels, n, t);
      out->codes[(size_t)i] = (uint8_t)q;
      out->values[(size_t)i] = fg.lo + (channel_levels[q] + 1.0f) * fg.half;
    });
  }
}

bool is_rotated(KvQuantCodec c) {
  return c == KvQuantCodec::Hadamard || c == KvQuantCodec::HadamardNormalFloat || c == KvQuantCodec::HadamardFit;
}

}  // namespace

bool kv_quantizer_is_fitted(const KvQuantizerSpec& s) {
  return s.codec == KvQuantCodec::Fit || s.codec == KvQuantCodec::HadamardFit;
}

std::string kv_quantizer_name(const KvQuantizerSpec& s) {
  std::ostringstream os;
  os << (s.codec == KvQuantCodec::Uniform                ? "uniform"
         : s.codec == KvQuantCodec::Hadamard           ? "hadamard"
         : s.codec == KvQuantCodec::HadamardNormalFloat ? "hnf"
         : s.codec == KvQuantCodec::Fit                 ? "fit"
         : s.codec == KvQuantCodec::HadamardFit         ? "hfit"
                                                        : "nf")
     << ':' << s.bits << ':' << s.group;
  if (s.signs) os << ":signs";
  if (s.keep_first > 0) os << ":keep=" << s.keep_first;
  if (s.outliers != KvOutlierScope::None)
    os << ":out=" << s.outlier_percent << (s.outliers == KvOutlierScope::Group ? "/group" : "/chunk");
  return os.str();
}

KvQuantizerSpec parse_kv_quantizer(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  KVF_CHECK(parts.size() >= 3, "kv quantizer '", text,
            "': expected CODEC:BITS:GROUP[:signs][:keep=N][:out=P/group|chunk]");
  KvQuantizerSpec s;
  if (parts[0] == "uniform") s.codec = KvQuantCodec::Uniform;
  else if (parts[0] == "hadamard") s.codec = KvQuantCodec::Hadamard;
  else if (parts[0] == "nf") s.codec = KvQuantCodec::NormalFloat;
  else if (parts[0] == "hnf") s.codec = KvQuantCodec::HadamardNormalFloat;
  else if (parts[0] == "fit") s.codec = KvQuantCodec::Fit;
  else if (parts[0] == "hfit") s.codec = KvQuantCodec::HadamardFit;
  else fail("kv quantizer '", text, "': unknown codec '", parts[0], "' (uniform, hadamard, nf, hnf, fit or hfit)");
  const auto number = [&](const std::string& t, const char* what) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    KVF_CHECK(used == t.size() && !t.empty() && std::isfinite(v), "kv quantizer '", text, "': ", what, " '", t,
              "' is not a number");
    return v;
  };
  const double bits = number(parts[1], "bits"), group = number(parts[2], "group");
  KVF_CHECK(bits == std::floor(bits) && group == std::floor(group) && bits >= 0 && bits < 64 && group >= 0 &&
                group < 1e6,
            "kv quantizer '", text, "': bits and group must be whole numbers");
  s.bits = (int)bits;
  s.group = (int)group;
  for (size_t i = 3; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p == "signs") {
      s.signs = true;
    } else if (p.rfind("keep=", 0) == 0) {
      const double k = number(p.substr(5), "keep");
      KVF_CHECK(k == std::floor(k) && k >= 0 && k <= (1 << 20), "kv quantizer '", text, "': keep=", p.substr(5),
                " is outside 0..", 1 << 20);
      s.keep_first = (int)k;
    } else if (p.rfind("out=", 0) == 0) {
      const std::string v = p.substr(4);
      const size_t slash = v.find('/');
      KVF_CHECK(slash != std::string::npos, "kv quantizer '", text, "': out=", v, " needs /group or /chunk");
      s.outlier_percent = number(v.substr(0, slash), "outlier percent");
      const std::string scope = v.substr(slash + 1);
      KVF_CHECK(scope == "group" || scope == "chunk", "kv quantizer '", text, "': outlier scope '", scope,
                "' is neither group nor chunk");
      s.outliers = scope == "group" ? KvOutlierScope::Group : KvOutlierScope::Chunk;
    } else {
      fail("kv quantizer '", text, "': unknown option '", p, "' (signs, keep=N, out=P/group, out=P/chunk)");
    }
  }
  return s;
}

void check_kv_quantizer(const KvQuantizerSpec& s, int64_t head_dim, const std::string& where) {
  const std::string name = where + ": kv quantizer " + kv_quantizer_name(s);
  check_low_bit_spec(low_bit_of(s), head_dim, name);
  const bool rotated = is_rotated(s.codec);
  KVF_CHECK(!s.signs || rotated, name, ": signs belong to the hadamard, hnf and hfit codecs");
  KVF_CHECK(!kv_quantizer_is_fitted(s) || (s.keep_first == 0 && s.outliers == KvOutlierScope::None), name,
            ": fit and hfit keep no rows and no outliers");
  KVF_CHECK(!rotated || (head_dim > 0 && (head_dim & (head_dim - 1)) == 0), name,
            ": the Hadamard transform needs a head dimension that is a power of 2, not ", head_dim);
  KVF_CHECK(!rotated || s.outliers == KvOutlierScope::None, name,
            ": outliers are kept by the uniform and nf codecs only");
  KVF_CHECK(s.outliers == KvOutlierScope::None || (s.outlier_percent > 0 && s.outlier_percent <= 50), name,
            ": outlier percent ", s.outlier_percent, " is outside (0, 50]");
}

int64_t kv_quantizer_outliers(const KvQuantizerSpec& s, KvMatrix m, int64_t rows, int64_t width) {
  if (s.outliers == KvOutlierScope::None) return 0;
  if (s.outliers == KvOutlierScope::Chunk) return kept_of(s.outlier_percent, rows * width);
  const Grouping gr = grouping_of(s, m, rows, width);
  int64_t n = 0;
  for (int64_t g = 0; g < gr.groups; ++g) n += kept_of(s.outlier_percent, values_in_group(s, m, rows, g, width));
  return n;
}

uint64_t kv_quantizer_bits(const KvQuantizerSpec& s, KvMatrix m, int64_t rows, int64_t width) {
  const Grouping gr = grouping_of(s, m, rows, width);
  const uint64_t codes = (uint64_t)(rows * width) * (uint64_t)s.bits;  // every row carries codes (low_bit_kv)
  const uint64_t kept = (uint64_t)(gr.kept * width) * 16;
  const bool absmax = s.codec == KvQuantCodec::NormalFloat || s.codec == KvQuantCodec::HadamardNormalFloat;
  const uint64_t params = (uint64_t)gr.groups * (absmax ? 16 : 32);
  uint64_t outliers = 0;
  if (s.outliers == KvOutlierScope::Chunk) {
    outliers = 32 + (uint64_t)kv_quantizer_outliers(s, m, rows, width) * (16 + index_bits(rows * width));
  } else if (s.outliers == KvOutlierScope::Group) {
    outliers = (uint64_t)kv_quantizer_outliers(s, m, rows, width) * (16 + index_bits(s.group));
  }
  return codes + kept + params + outliers;
}

void add_kv_calibration(const KvQuantizerSpec& s, KvMatrix m, const float* x, int64_t rows, int64_t width,
                        int64_t head_dim, KvLevelFitter& fitter) {
  check_kv_quantizer(s, head_dim, "add_kv_calibration");
  KVF_CHECK(kv_quantizer_is_fitted(s) && fitter.bits() == s.bits && fitter.width() == width, "add_kv_calibration: ",
            kv_quantizer_name(s), " over ", width, " channels: a fitter of ", fitter.bits(), " bits and ",
            fitter.width(), " channels does not serve it");
  KVF_CHECK(rows > 0 && width > 0 && head_dim > 0 && width % head_dim == 0, "add_kv_calibration: ", rows,
            " rows of ", width, " values are not heads of ", head_dim);
  if (s.codec == KvQuantCodec::Fit) {
    fit_pass(s, m, x, rows, width, nullptr, &fitter, nullptr);
    return;
  }
  std::vector<float> y(x, x + rows * width);
  hadamard_rows(y.data(), rows, width, head_dim, s.signs);
  fit_pass(s, m, y.data(), rows, width, nullptr, &fitter, nullptr);
}

KvQuantized quantize_kv_matrix(const KvQuantizerSpec& s, KvMatrix m, const float* x, int64_t rows, int64_t width,
                               int64_t head_dim, const KvFittedLevels* levels) {
  check_kv_quantizer(s, head_dim, "quantize_kv_matrix");
  KVF_CHECK(rows > 0 && width > 0 && head_dim > 0 && width % head_dim == 0, "quantize_kv_matrix: ", rows,
            " rows of ", width, " values are not heads of ", head_dim);
  KVF_CHECK(!kv_quantizer_is_fitted(s) || (levels && levels->bits == s.bits && levels->width == width),
            "quantize_kv_matrix: ", kv_quantizer_name(s), " needs levels fitted for ", s.bits, " bits and ", width,
            " channels", levels ? "; these are for other bits or channels" : "");
  KvQuantized out;
  out.bits = kv_quantizer_bits(s, m, rows, width);
  const size_t n = (size_t)(rows * width);
  if (s.codec == KvQuantCodec::Fit) {
    fit_pass(s, m, x, rows, width, levels, nullptr, &out);
    return out;
  }
  if (is_rotated(s.codec)) {
    std::vector<float> y(x, x + n);
    hadamard_rows(y.data(), rows, width, head_dim, s.signs);
    if (s.codec == KvQuantCodec::Hadamard) uniform_round_trip(s, m, y.data(), rows, width, out);
    else if (s.codec == KvQuantCodec::HadamardFit) fit_pass(s, m, y.data(), rows, width, levels, nullptr, &out);
    else normal_float_round_trip(s, m, y.data(), rows, width, out);
    if (s.codec == KvQuantCodec::HadamardNormalFloat)  // kept rows as f16, in the rotated space like every row
      for (int64_t i = 0; i < std::min<int64_t>(s.keep_first, rows) * width; ++i)
        out.values[(size_t)i] = f16_to_f32(f32_to_f16(y[(size_t)i]));
    inverse_hadamard_rows(out.values.data(), rows, width, head_dim, s.signs);
    return out;
  }
  // Outliers: which values are kept, then each clamped into its group's range of the others.
  std::vector<char> outlier(n, 0);
  const Grouping gr = grouping_of(s, m, rows, width);
  const auto mark_top = [&](std::vector<int64_t>& idx, int64_t keep) {
    if (keep <= 0) return;
    std::nth_element(idx.begin(), idx.begin() + (keep - 1), idx.end(), [&](int64_t a, int64_t b) {
      const float fa = std::fabs(x[a]), fb = std::fabs(x[b]);
      return fa != fb ? fa > fb : a < b;
    });
    for (int64_t i = 0; i < keep; ++i) outlier[(size_t)idx[(size_t)i]] = 1;
  };
  if (s.outliers == KvOutlierScope::Chunk) {
    std::vector<int64_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = (int64_t)i;
    mark_top(idx, kept_of(s.outlier_percent, (int64_t)n));
  } else if (s.outliers == KvOutlierScope::Group) {
    std::vector<int64_t> idx;
    for (int64_t g = 0; g < gr.groups; ++g) {
      idx.clear();
      for_group(s, m, rows, width, g, [&](int64_t i) { idx.push_back(i); });
      mark_top(idx, kept_of(s.outlier_percent, (int64_t)idx.size()));
    }
  }
  const float* in = x;
  std::vector<float> clamped;
  if (s.outliers != KvOutlierScope::None) {
    clamped.assign(x, x + n);
    for (int64_t g = 0; g < gr.groups; ++g) {
      float lo = INFINITY, hi = -INFINITY;
      for_group(s, m, rows, width, g, [&](int64_t i) {
        if (!outlier[(size_t)i]) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
      });
      if (lo > hi) lo = hi = 0;  // every value of the group kept
      for_group(s, m, rows, width, g, [&](int64_t i) {
        if (outlier[(size_t)i]) clamped[(size_t)i] = std::clamp(x[i], lo, hi);
      });
    }
    in = clamped.data();
  }
  if (s.codec == KvQuantCodec::Uniform) uniform_round_trip(s, m, in, rows, width, out);
  else normal_float_round_trip(s, m, in, rows, width, out);
  // Kept rows (nf: as uniform's codec keeps them, f16) and outliers (f16).
  const int64_t kept_rows = std::min<int64_t>(s.keep_first, rows);
  if (s.codec == KvQuantCodec::NormalFloat)
    for (int64_t i = 0; i < kept_rows * width; ++i) out.values[(size_t)i] = f16_to_f32(f32_to_f16(x[i]));
  for (size_t i = 0; i < n; ++i)
    if (outlier[i]) {
      out.values[i] = f16_to_f32(f32_to_f16(x[i]));
      ++out.outliers;
    }
  return out;
}

}  // namespace kvf
