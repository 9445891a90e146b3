// The Backend interface's defaults for the BERT encoder's element-wise ops (LayerNorm with a bias, GELU after a
// bias): computed on the host, in place on a host backend, through a copy and back on any other (two transfers a
// call: one implementation, checked on the CPU, for every backend).
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"

namespace kvf {
namespace {

// erf as a rational function (Eigen's float erf, clamped to [-4, 4] where it reaches +-1; within 4e-7 of erf):
// plain arithmetic the compiler vectorises; std::erf made the encoder markedly slower (docs/engine.md#erf).
inline float fast_erf(float x) {
  x = std::min(std::max(x, -4.0f), 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

// A tensor's f32 values where host code can use them: its own memory on a host backend, else a copy.
class HostValues {
 public:
  HostValues(Backend& be, const Tensor& t) : be_(be), t_(t) {
    if (be.device() == Device::Host) {
      data_ = const_cast<float*>(t.data<float>());
    } else {
      copy_.resize((size_t)t.numel());
      be.copy_to_host(t, copy_.data(), copy_.size() * sizeof(float));
      data_ = copy_.data();
    }
  }
  float* data() { return data_; }
  void write_back() {  // a copy's changes to the tensor
    if (!copy_.empty()) be_.copy_from_host(const_cast<Tensor&>(t_), copy_.data(), copy_.size() * sizeof(float));
  }

 private:
  Backend& be_;
  const Tensor& t_;
  std::vector<float> copy_;
  float* data_ = nullptr;
};

}  // namespace

void Backend::layer_norm(Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  KVF_CHECK(x.dtype == DType::F32, "layer_norm: x must be f32");
  const int64_t rows = x.dim(0), d = x.row_elems();
  KVF_CHECK(gamma.numel() == d && beta.numel() == d, "layer_norm: gamma ", gamma.numel(), " and beta ",
            beta.numel(), " for rows of ", d);
  HostValues xs(*this, x), gs(*this, gamma), bs(*this, beta);
  const float *g = gs.data(), *b = bs.data();
  float* values = xs.data();
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t r) {
    float* v = values + r * d;
    double sum = 0.0;
    for (int64_t i = 0; i < d; ++i) sum += v[i];
    const double mean = sum / (double)d;
    double sq = 0.0;
    for (int64_t i = 0; i < d; ++i) sq += (v[i] - mean) * (v[i] - mean);
    const float m = (float)mean, inv = (float)(1.0 / std::sqrt(sq / (double)d + (double)eps));
    for (int64_t i = 0; i < d; ++i) v[i] = (v[i] - m) * inv * g[i] + b[i];
  });
  xs.write_back();
}

void Backend::bias_gelu(Tensor& x, const Tensor& bias) {
  KVF_CHECK(x.dtype == DType::F32, "bias_gelu: x must be f32");
  const int64_t rows = x.dim(0), d = x.row_elems();
  KVF_CHECK(bias.numel() == d, "bias_gelu: bias of ", bias.numel(), " for rows of ", d);
  HostValues xs(*this, x), bs(*this, bias);
  const float* b = bs.data();
  float* values = xs.data();
  tbb::parallel_for(int64_t{0}, rows, [&](int64_t r) {
    float* v = values + r * d;
    for (int64_t i = 0; i < d; ++i) {
      const float y = v[i] + b[i];
      v[i] = 0.5f * y * (1.0f + fast_erf(y * 0.70710678118654752f));
    }
  });
  xs.write_back();
}

}  // namespace kvf
