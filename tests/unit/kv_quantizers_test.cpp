// Candidate KV quantizers (compress/kv_quantizers.h): the Hadamard rotation is orthogonal, every codec's bits
// match a hand count, their errors order as expected on Gaussian KV with outlier channels, the codes are the stored
// ones, fitted levels find the values they are fitted to and beat uniform levels, bad specs are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compress/kv_fitted_levels.h"
#include "compress/kv_quantizers.h"
#include "core/error.h"
#include "core/low_bit_kv.h"

namespace kvf {
namespace {

constexpr int64_t kRows = 100, kWidth = 128, kHeadDim = 64;

// Gaussian values; with outliers, channels 3 and 70 are 20x larger and channel 5 sits 7 away from 0.
std::vector<float> gaussian(int64_t rows, int64_t width, uint32_t seed, bool outlier_channels) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x((size_t)(rows * width));
  for (int64_t i = 0; i < rows * width; ++i) {
    const int64_t c = i % width;
    x[(size_t)i] = normal(rng);
    if (outlier_channels) x[(size_t)i] = x[(size_t)i] * (c == 3 || c == 70 ? 20.0f : 1.0f) + (c == 5 ? 7.0f : 0.0f);
  }
  return x;
}

double relative_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i) e += (x[i] - y[i]) * (double)(x[i] - y[i]), n += x[i] * (double)x[i];
  return std::sqrt(e / n);
}

double error_of(const std::string& codec, KvMatrix m, const std::vector<float>& x) {
  return relative_error(x, quantize_kv_matrix(parse_kv_quantizer(codec), m, x.data(), kRows, kWidth, kHeadDim).values);
}

TEST(KvQuantizers, HadamardIsOrthogonal) {
  for (bool signs : {false, true}) {
    const std::vector<float> x = gaussian(7, kWidth, 1, true);
    std::vector<float> y = x;
    hadamard_rows(y.data(), 7, kWidth, kHeadDim, signs);
    for (int64_t h = 0; h < 7 * 2; ++h) {  // every head vector keeps its norm
      double nx = 0, ny = 0;
      for (int64_t c = 0; c < kHeadDim; ++c) {
        const double a = x[(size_t)(h * kHeadDim + c)], b = y[(size_t)(h * kHeadDim + c)];
        nx += a * a;
        ny += b * b;
      }
      EXPECT_NEAR(std::sqrt(ny), std::sqrt(nx), 1e-5 * std::sqrt(nx));
    }
    EXPECT_GT(relative_error(x, y), 0.5);  // it did rotate
    inverse_hadamard_rows(y.data(), 7, kWidth, kHeadDim, signs);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(y[i], x[i], 1e-5f * (1.0f + std::fabs(x[i])));
    }
  }
  // Unsigned: the first unit vector goes to the constant 1 / sqrt(d), the transform being H / sqrt(d).
  std::vector<float> e((size_t)kHeadDim, 0.0f);
  e[0] = 1.0f;
  hadamard_rows(e.data(), 1, kHeadDim, kHeadDim, false);
  for (float v : e) {
    EXPECT_FLOAT_EQ(v, 0.125f);
  }
  // The signs are fixed and mixed.
  int negative = 0;
  for (int64_t c = 0; c < kHeadDim; ++c) negative += kv_hadamard_sign(c) < 0;
  EXPECT_GT(negative, 16);
  EXPECT_LT(negative, 48);
}

TEST(KvQuantizers, BitsMatchAHandCount) {
  const auto bits = [](const std::string& codec, KvMatrix m) {
    return kv_quantizer_bits(parse_kv_quantizer(codec), m, kRows, kWidth);
  };
  // uniform 4 bits, groups of 32: K 4 blocks of rows x 128 channels x (scale, min); V 100 rows x 4 groups.
  EXPECT_EQ(bits("uniform:4:32", KvMatrix::Key), 100u * 128 * 4 + 4 * 128 * 32);
  EXPECT_EQ(bits("uniform:4:32", KvMatrix::Value), 100u * 128 * 4 + 100 * 4 * 32);
  // ... exactly the bytes of core/low_bit_kv's chunk (K and V together), kept rows included.
  for (const char* codec : {"uniform:4:32", "uniform:2:64:keep=4", "uniform:3:16:keep=3"}) {
    const KvQuantizerSpec s = parse_kv_quantizer(codec);
    EXPECT_EQ(bits(codec, KvMatrix::Key) + bits(codec, KvMatrix::Value),
              8 * low_bit_chunk_bytes({s.bits, s.group, s.keep_first}, kRows, kWidth))
        << codec;
  }
  // Kept rows: 4 rows of f16, then 3 blocks of (at most) 32 rows; every row still carries codes.
  EXPECT_EQ(bits("uniform:4:32:keep=4", KvMatrix::Key), 4u * 128 * 16 + 3 * 128 * 32 + 100 * 128 * 4);
  // The rotation costs nothing.
  EXPECT_EQ(bits("hadamard:2:64:signs", KvMatrix::Value), bits("uniform:2:64", KvMatrix::Value));
  // nf: one f16 scale per group.
  EXPECT_EQ(bits("nf:3:64", KvMatrix::Value), 100u * 128 * 3 + 100 * 2 * 16);
  EXPECT_EQ(bits("nf:2:64", KvMatrix::Key), 100u * 128 * 2 + 2 * 128 * 16);
  EXPECT_EQ(bits("hnf:2:64:signs", KvMatrix::Key), bits("nf:2:64", KvMatrix::Key));
  // Per-group outliers: ceil(1% of 64) = 1 of the 64-row block and ceil(1% of 36) = 1 of the last, per channel,
  // each an f16 value and a 16-bit index.
  EXPECT_EQ(bits("uniform:2:64:out=1/group", KvMatrix::Key), 100u * 128 * 2 + 2 * 128 * 32 + 2 * 128 * 32);
  // Per-chunk outliers: ceil(1% of 12,800) = 128 values and indices, and a 32-bit count.
  EXPECT_EQ(bits("uniform:2:64:out=1/chunk", KvMatrix::Value), 100u * 128 * 2 + 200 * 32 + 128 * 32 + 32);
  // The codec keeps as many outliers as it counts.
  const std::vector<float> x = gaussian(kRows, kWidth, 2, true);
  for (const char* codec : {"uniform:2:64:out=1/group", "nf:3:32:out=2/chunk", "nf:4:16:out=5/group"}) {
    for (KvMatrix m : {KvMatrix::Key, KvMatrix::Value}) {
      const KvQuantizerSpec s = parse_kv_quantizer(codec);
      const KvQuantized q = quantize_kv_matrix(s, m, x.data(), kRows, kWidth, kHeadDim);
      EXPECT_EQ(q.outliers, kv_quantizer_outliers(s, m, kRows, kWidth)) << codec;
      EXPECT_EQ(q.bits, kv_quantizer_bits(s, m, kRows, kWidth)) << codec;
    }
  }
}

TEST(KvQuantizers, UniformIsTheLowBitCodec) {
  const std::vector<float> k = gaussian(kRows, kWidth, 3, true), v = gaussian(kRows, kWidth, 4, false);
  const LowBitSpec ls{3, 32, 2};
  std::vector<uint8_t> bytes;
  encode_low_bit_chunk(ls, k.data(), v.data(), kRows, kWidth, bytes);
  std::vector<float> k_out(k.size()), v_out(v.size());
  ASSERT_TRUE(decode_low_bit_chunk(ls, bytes.data(), kRows, kWidth, k_out.data(), v_out.data()));
  const KvQuantizerSpec s = parse_kv_quantizer("uniform:3:32:keep=2");
  EXPECT_EQ(quantize_kv_matrix(s, KvMatrix::Key, k.data(), kRows, kWidth, kHeadDim).values, k_out);
  EXPECT_EQ(quantize_kv_matrix(s, KvMatrix::Value, v.data(), kRows, kWidth, kHeadDim).values, v_out);
}

TEST(KvQuantizers, ErrorsOrderAsExpected) {
  const std::vector<float> x = gaussian(kRows, kWidth, 5, true), plain = gaussian(kRows, kWidth, 6, false);
  // V has its groups along the row, so an outlier channel widens every row's range: rotation spreads it over
  // the head at no cost in bits, and keeping the outliers exact lets 3 bits beat 4 at the same bits per value
  // (V: 4 + 32 / 64 = 3 + 32 / 64 + 2 x 32 / 64 = 4.5).
  EXPECT_EQ(kv_quantizer_bits(parse_kv_quantizer("uniform:4:64"), KvMatrix::Value, kRows, kWidth),
            kv_quantizer_bits(parse_kv_quantizer("uniform:3:64:out=2/group"), KvMatrix::Value, kRows, kWidth));
  for (int bits : {2, 3, 4}) {
    const std::string b = std::to_string(bits);
    const double uniform = error_of("uniform:" + b + ":64", KvMatrix::Value, x);
    EXPECT_LT(error_of("hadamard:" + b + ":64", KvMatrix::Value, x), 0.7 * uniform) << bits;
    EXPECT_LT(error_of("hadamard:" + b + ":64:signs", KvMatrix::Value, x), 0.7 * uniform) << bits;
    EXPECT_LT(error_of("uniform:" + b + ":64:out=2/group", KvMatrix::Value, x), 0.5 * uniform) << bits;
    EXPECT_LT(error_of("uniform:" + b + ":64:out=2/chunk", KvMatrix::Value, x), 0.5 * uniform) << bits;
    EXPECT_LT(error_of("nf:" + b + ":64:out=2/group", KvMatrix::Value, x), 0.5 * uniform) << bits;
  }
  EXPECT_LT(error_of("uniform:3:64:out=2/group", KvMatrix::Value, x), error_of("uniform:4:64", KvMatrix::Value, x));
  // nf after the rotation beats nf alone on V with outlier channels, at the same bits.
  for (int bits : {2, 3, 4}) {
    const std::string b = std::to_string(bits);
    EXPECT_LT(error_of("hnf:" + b + ":64:signs", KvMatrix::Value, x),
              0.7 * error_of("nf:" + b + ":64", KvMatrix::Value, x))
        << bits;
  }
  // More bits, less error, for every codec on both matrices.
  for (const char* codec : {"uniform", "hadamard", "nf", "hnf"}) {
    for (KvMatrix m : {KvMatrix::Key, KvMatrix::Value}) {
      const std::string c = codec;
      EXPECT_LT(error_of(c + ":4:32", m, x), error_of(c + ":3:32", m, x)) << c;
      EXPECT_LT(error_of(c + ":3:32", m, x), error_of(c + ":2:32", m, x)) << c;
    }
  }
  // On plain Gaussian values every codec is near its resolution: 4 bits within 15%.
  for (const char* codec : {"uniform:4:32", "hadamard:4:32", "nf:4:32", "hnf:4:32"}) {
    EXPECT_LT(error_of(codec, KvMatrix::Value, plain), 0.15) << codec;
    EXPECT_LT(error_of(codec, KvMatrix::Key, plain), 0.15) << codec;
  }
  // Kept rows come back as their f16 values.
  for (const char* codec : {"nf:2:32:keep=3", "hnf:2:32:signs:keep=3"}) {
    const KvQuantized q =
        quantize_kv_matrix(parse_kv_quantizer(codec), KvMatrix::Key, x.data(), kRows, kWidth, kHeadDim);
    for (int64_t i = 0; i < 3 * kWidth; ++i) {
      EXPECT_NEAR(q.values[(size_t)i], x[(size_t)i], 2e-2) << codec;
    }
  }
}

TEST(KvQuantizers, CodesAreTheStoredOnes) {
  // K: row r holds r % 4 in every channel, so each group of 32 rows has minimum 0, scale 1 and code r % 4; V: value
  // c holds c % 4 in every row, so each group of 32 values has code c % 4.
  std::vector<float> k((size_t)(kRows * kWidth)), v(k.size());
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kWidth; ++c) {
      k[(size_t)(r * kWidth + c)] = (float)(r % 4);
      v[(size_t)(r * kWidth + c)] = (float)(c % 4);
    }
  const KvQuantizerSpec s = parse_kv_quantizer("uniform:2:32");
  const KvQuantized kq = quantize_kv_matrix(s, KvMatrix::Key, k.data(), kRows, kWidth, kHeadDim);
  const KvQuantized vq = quantize_kv_matrix(s, KvMatrix::Value, v.data(), kRows, kWidth, kHeadDim);
  ASSERT_EQ(kq.codes.size(), k.size());
  for (size_t i = 0; i < k.size(); ++i) {
    EXPECT_EQ(kq.codes[i], (uint8_t)k[i]) << i;
    EXPECT_EQ(vq.codes[i], (uint8_t)v[i]) << i;
    EXPECT_EQ(kq.values[i], k[i]) << i;
  }
  // nf: the code indexes the level the value became, level times the group's scale.
  const std::vector<float> x = gaussian(kRows, kWidth, 9, false);
  const KvQuantized nq = quantize_kv_matrix(parse_kv_quantizer("nf:3:32"), KvMatrix::Value, x.data(), kRows, kWidth,
                                            kHeadDim);
  const std::vector<float> levels = normal_float_levels(3);
  for (int64_t g = 0; g < kRows * kWidth / 32; ++g) {  // within a group, value / level is the one scale
    const float scale = nq.values[(size_t)(g * 32)] / levels[nq.codes[(size_t)(g * 32)]];
    for (int64_t i = g * 32; i < (g + 1) * 32; ++i) {
      EXPECT_NEAR(nq.values[(size_t)i], levels[nq.codes[(size_t)i]] * scale, 1e-5f * scale) << i;
    }
  }
}

TEST(KvQuantizers, FittedLevelsFindTheValues) {
  KvLevelFitter fitter(2, 3);
  const float four[] = {-0.75f, -0.25f, 0.25f, 0.75f};
  for (int i = 0; i < 400; ++i) {
    fitter.add(0, four[i % 4]);
    fitter.add(1, i % 3 == 0 ? -0.5f : 0.5f);  // two values, twice as many at 0.5
  }
  const KvFittedLevels f = fitter.fit();
  ASSERT_EQ(f.levels.size(), 3u * 4);
  const float bin = 2.0f / KvLevelFitter::kBins;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(f.of(0)[i], four[i], bin) << i;
  }
  // Channel 1: a level on each value, the others where they started or on a value; channel 2 saw nothing.
  std::vector<float> c1(f.of(1), f.of(1) + 4);
  EXPECT_NEAR(c1[(size_t)nearest_level(c1, -0.5f)], -0.5f, bin);
  EXPECT_NEAR(c1[(size_t)nearest_level(c1, 0.5f)], 0.5f, bin);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(f.of(2)[i], -1.0f + 2.0f * (float)i / 3, 1e-6f) << i;
  }
}

TEST(KvQuantizers, FitCodecBeatsUniformLevelsAtTheSameBits) {
  // Levels fitted to calibration data: Gaussian like the data measured, but other draws.
  for (const char* codec : {"fit:2:64", "hfit:2:64", "hfit:3:64"}) {
    const KvQuantizerSpec s = parse_kv_quantizer(codec);
    for (KvMatrix m : {KvMatrix::Key, KvMatrix::Value}) {
      KvLevelFitter fitter(s.bits, kWidth);
      for (uint32_t seed = 20; seed < 24; ++seed) {
        const std::vector<float> c = gaussian(kRows, kWidth, seed, false);
        add_kv_calibration(s, m, c.data(), kRows, kWidth, kHeadDim, fitter);
      }
      const KvFittedLevels levels = fitter.fit();
      const std::vector<float> x = gaussian(kRows, kWidth, 7, false);
      const KvQuantized q = quantize_kv_matrix(s, m, x.data(), kRows, kWidth, kHeadDim, &levels);
      // The uniform codec's bits (f16 minimum and scale per group) and less error.
      KvQuantizerSpec uniform = s;
      uniform.codec = KvQuantCodec::Uniform;
      EXPECT_EQ(q.bits, kv_quantizer_bits(uniform, m, kRows, kWidth)) << codec;
      const double fitted = relative_error(x, q.values), plain = error_of(kv_quantizer_name(uniform), m, x);
      // Measured here: 0.75-0.77x at 2 bits and 0.91x at 3 (Lloyd moves the outer levels in from the extremes).
      EXPECT_LT(fitted, (s.bits == 2 ? 0.8 : 0.95) * plain) << codec << " " << (int)m << " " << fitted / plain;
      // Each value is its channel's level mapped back by its group's minimum and half range: within a group of V
      // (64 values of a row) the values are one affine map of their levels.
      if (m == KvMatrix::Value && s.codec == KvQuantCodec::Fit)
        for (int64_t g = 0; g < kRows * kWidth / 64; ++g) {
          const auto level = [&](int64_t i) { return levels.of(i % kWidth)[q.codes[(size_t)i]]; };
          int64_t j = g * 64 + 1;
          while (j < (g + 1) * 64 && level(j) == level(g * 64)) ++j;
          ASSERT_LT(j, (g + 1) * 64) << "group " << g << " decoded to one level";
          const double slope = (q.values[(size_t)j] - q.values[(size_t)(g * 64)]) / (level(j) - level(g * 64));
          const double at0 = q.values[(size_t)(g * 64)] - slope * level(g * 64);
          for (int64_t i = g * 64; i < (g + 1) * 64; ++i) {
            EXPECT_NEAR(q.values[(size_t)i], at0 + slope * level(i), 1e-4 * std::fabs(slope)) << i;
          }
        }
    }
  }
  // Without levels, or with levels for other bits, a fitted codec is refused.
  const std::vector<float> x = gaussian(kRows, kWidth, 8, false);
  EXPECT_THROW(quantize_kv_matrix(parse_kv_quantizer("fit:2:32"), KvMatrix::Key, x.data(), kRows, kWidth, kHeadDim),
               Error);
  const KvFittedLevels three = KvLevelFitter(3, kWidth).fit();
  EXPECT_THROW(quantize_kv_matrix(parse_kv_quantizer("fit:2:32"), KvMatrix::Key, x.data(), kRows, kWidth, kHeadDim,
                                  &three),
               Error);
}

TEST(KvQuantizers, NormalFloatLevels) {
  for (int bits : {2, 3, 4}) {
    const std::vector<float> l = normal_float_levels(bits);
    ASSERT_EQ(l.size(), (size_t)(1 << bits));
    EXPECT_EQ(l.front(), -1.0f);
    EXPECT_EQ(l.back(), 1.0f);
    for (size_t i = 1; i < l.size(); ++i) {
      EXPECT_LT(l[i - 1], l[i]);
    }
    for (size_t i = 0; i < l.size(); ++i) {
      EXPECT_NEAR(l[i], -l[l.size() - 1 - i], 1e-6);
    }
  }
  // 2 bits: the quantiles at 1/8 and 3/8 (-1.1503, -0.3186), over 1.1503.
  EXPECT_NEAR(normal_float_levels(2)[1], -0.3186 / 1.1503, 1e-3);
}

TEST(KvQuantizers, BadSpecsAreRefused) {
  const auto refused = [](const std::string& text, int64_t head_dim, const std::string& says) {
    try {
      check_kv_quantizer(parse_kv_quantizer(text), head_dim, "test");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << text << ": " << e.what();
      return;
    }
    ADD_FAILURE() << text << " was accepted";
  };
  refused("zip:4:32", 64, "unknown codec 'zip'");
  refused("uniform:4", 64, "expected CODEC:BITS:GROUP");
  refused("uniform:four:32", 64, "bits 'four' is not a number");
  refused("uniform:5:32", 64, "5 bits");
  refused("nf:4:30", 64, "group size 30");
  refused("uniform:3:4", 64, "multiple of 8");
  refused("hadamard:4:16", 48, "power of 2");
  refused("uniform:4:32:signs", 64, "signs belong to the hadamard, hnf and hfit codecs");
  refused("fit:2:32:keep=2", 64, "keep no rows and no outliers");
  refused("fit:2:32:out=1/chunk", 64, "keep no rows and no outliers");
  refused("hfit:2:16", 48, "power of 2");
  refused("hnf:4:16", 48, "power of 2");
  refused("hnf:4:32:out=1/chunk", 64, "uniform and nf codecs only");
  refused("hadamard:4:32:out=1/group", 64, "uniform and nf codecs only");
  refused("uniform:4:32:out=0/group", 64, "outside (0, 50]");
  refused("uniform:4:32:out=1/row", 64, "neither group nor chunk");
  refused("uniform:4:32:out=1", 64, "needs /group or /chunk");
  refused("uniform:4:32:keep=-1", 64, "keep=-1");
  refused("uniform:4:32:fast", 64, "unknown option 'fast'");
  // The text form round-trips.
  for (const char* text :
       {"uniform:4:32", "hadamard:2:64:signs", "nf:3:64:keep=4:out=1/group", "uniform:2:32:out=0.5/chunk",
        "hnf:2:64:signs:keep=2", "fit:3:32", "hfit:2:64:signs"}) {
    EXPECT_EQ(kv_quantizer_name(parse_kv_quantizer(text)), text);
  }
  // A matrix that is not heads of head_dim is refused.
  const std::vector<float> x(100, 0.0f);
  EXPECT_THROW(quantize_kv_matrix(parse_kv_quantizer("uniform:4:32"), KvMatrix::Key, x.data(), 1, 100, 64), Error);
}

}  // namespace
}  // namespace kvf
