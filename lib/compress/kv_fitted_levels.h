// Data-fit quantization levels for the study's fit and hfit codecs (compress/kv_quantizers.h): per channel, 2^bits
// levels in [-1, 1] fitted by Lloyd's algorithm (one-dimensional k-means) to the normalized values of calibration
// chunks, as KVQuant fits its non-uniform levels per channel (without its sensitivity weights). The fitter keeps a
// histogram per channel, so a calibration pass over hundreds of chunks costs a fixed, small memory.
#pragma once
#include <cstdint>
#include <vector>

namespace kvf {

struct KvFittedLevels {
  int bits = 0;
  int64_t width = 0;          // channels
  std::vector<float> levels;  // [width][2^bits], each channel's ascending

  const float* of(int64_t channel) const { return levels.data() + channel * ((int64_t)1 << bits); }
};

class KvLevelFitter {
 public:
  static constexpr int kBins = 512;  // over [-1, 1]: 1/256 apart, far finer than 16 levels

  KvLevelFitter(int bits, int64_t width);
  // One normalized value t (clamped into [-1, 1]) of `channel`.
  void add(int64_t channel, float t);
  int bits() const { return bits_; }
  int64_t width() const { return width_; }
  // Lloyd's algorithm per channel from evenly spaced levels, `iterations` rounds; a channel with fewer distinct
  // values than levels keeps a level on each value and the rest where they started.
  KvFittedLevels fit(int iterations = 50) const;

 private:
  int bits_;
  int64_t width_;
  std::vector<uint32_t> counts_;  // [width][kBins]
};

}  // namespace kvf
