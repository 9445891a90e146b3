#include "support/reference_decoder.h"

#include <cmath>

#include "io/gguf.h"

namespace kvf::test {
namespace {

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;  // [rows][cols]

Mat read_matrix(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo& info = f.tensor(name);
  const int64_t cols = info.ne[0], rows = info.rows();
  std::vector<float> row(cols);
  Mat m(rows, Vec(cols));
  for (int64_t r = 0; r < rows; ++r) {
    f.dequantize_rows(info, r, 1, row.data());
    m[r].assign(row.begin(), row.end());
  }
  return m;
}

Vec read_vector(const gguf::File& f, const std::string& name) { return read_matrix(f, name)[0]; }

Vec matvec(const Mat& w, const Vec& x) {
  Vec y(w.size(), 0.0);
  for (size_t r = 0; r < w.size(); ++r)
    for (size_t c = 0; c < x.size(); ++c) y[r] += w[r][c] * x[c];
  return y;
}

Vec rms_norm(const Vec& x, const Vec& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
  return y;
}

// Rotates each head of x at position pos; adjacent pairs (GGUF llama) or half-split pairs (qwen2).
void rope(Vec& x, int heads, int hd, int pos, double theta, bool adjacent) {
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < hd / 2; ++i) {
      const double angle = pos * std::pow(theta, -2.0 * i / hd);
      const int a = h * hd + (adjacent ? 2 * i : i), b = h * hd + (adjacent ? 2 * i + 1 : i + hd / 2);
      const double x0 = x[a], x1 = x[b];
      x[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
      x[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
}

}  // namespace

std::vector<std::vector<double>> reference_logits(const std::string& path, const std::vector<int32_t>& tokens) {
  const auto f = gguf::File::open(path);
  const std::string arch = f->get_string("general.architecture"), a = arch + ".";
  const int n_layers = (int)f->get_int(a + "block_count");
  const int hidden = (int)f->get_int(a + "embedding_length");
  const int heads = (int)f->get_int(a + "attention.head_count");
  const int kv_heads = (int)f->get_int(a + "attention.head_count_kv");
  const double eps = f->get_float(a + "attention.layer_norm_rms_epsilon");
  const double theta = f->get_float(a + "rope.freq_base");
  const int hd = hidden / heads;
  const bool adjacent = arch == "llama";
  const Mat embd = read_matrix(*f, "token_embd.weight");
  const Mat out_w = f->find_tensor("output.weight") ? read_matrix(*f, "output.weight") : embd;
  const int n = (int)tokens.size();

  Mat x(n);
  for (int i = 0; i < n; ++i) x[i] = embd[tokens[i]];
  for (int l = 0; l < n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const Mat wq = read_matrix(*f, p + "attn_q.weight"), wk = read_matrix(*f, p + "attn_k.weight"),
              wv = read_matrix(*f, p + "attn_v.weight"), wo = read_matrix(*f, p + "attn_output.weight");
    const Mat wg = read_matrix(*f, p + "ffn_gate.weight"), wu = read_matrix(*f, p + "ffn_up.weight"),
              wd = read_matrix(*f, p + "ffn_down.weight");
    const Vec attn_norm = read_vector(*f, p + "attn_norm.weight"), ffn_norm = read_vector(*f, p + "ffn_norm.weight");
    const bool bias = f->find_tensor(p + "attn_q.bias") != nullptr;
    Mat q(n), k(n), v(n);
    for (int i = 0; i < n; ++i) {
      const Vec xn = rms_norm(x[i], attn_norm, eps);
      q[i] = matvec(wq, xn);
      k[i] = matvec(wk, xn);
      v[i] = matvec(wv, xn);
      if (bias) {
        const Vec bq = read_vector(*f, p + "attn_q.bias"), bk = read_vector(*f, p + "attn_k.bias"),
                  bv = read_vector(*f, p + "attn_v.bias");
        for (size_t j = 0; j < bq.size(); ++j) q[i][j] += bq[j];
        for (size_t j = 0; j < bk.size(); ++j) k[i][j] += bk[j], v[i][j] += bv[j];
      }
      rope(q[i], heads, hd, i, theta, adjacent);
      rope(k[i], kv_heads, hd, i, theta, adjacent);
    }
    for (int i = 0; i < n; ++i) {
      Vec attn(heads * hd, 0.0);
      for (int h = 0; h < heads; ++h) {
        const int g = h / (heads / kv_heads);
        Vec s(i + 1);
        double mx = -1e300;
        for (int j = 0; j <= i; ++j) {
          s[j] = 0;
          for (int d = 0; d < hd; ++d) s[j] += q[i][h * hd + d] * k[j][g * hd + d];
          s[j] /= std::sqrt((double)hd);
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < hd; ++d) attn[h * hd + d] += s[j] / sum * v[j][g * hd + d];
      }
      const Vec o = matvec(wo, attn);
      for (int c = 0; c < hidden; ++c) x[i][c] += o[c];
      const Vec xn = rms_norm(x[i], ffn_norm, eps);
      const Vec gate = matvec(wg, xn), up = matvec(wu, xn);
      Vec act(gate.size());
      for (size_t j = 0; j < gate.size(); ++j) act[j] = gate[j] / (1.0 + std::exp(-gate[j])) * up[j];
      const Vec down = matvec(wd, act);
      for (int c = 0; c < hidden; ++c) x[i][c] += down[c];
    }
  }
  const Vec out_norm = read_vector(*f, "output_norm.weight");
  std::vector<std::vector<double>> logits(n);
  for (int i = 0; i < n; ++i) logits[i] = matvec(out_w, rms_norm(x[i], out_norm, eps));
  return logits;
}

}  // namespace kvf::test
