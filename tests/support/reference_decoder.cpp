#include "support/reference_decoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_set>

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

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("reference_forward: " + what);
}

}  // namespace

ReferenceView ReferenceTrace::as_view(const std::vector<int32_t>& positions) const {
  require((int64_t)positions.size() == n_rows, "as_view needs one position per computed row");
  return ReferenceView{positions, k, v};
}

ReferenceTrace reference_forward(const std::string& path, const std::vector<ReferenceView>& view,
                                 const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                 int passes) {
  const auto f = gguf::File::open(path);
  const std::string arch = f->get_string("general.architecture"), a = arch + ".";
  const int n_layers = (int)f->get_int(a + "block_count");
  const int hidden = (int)f->get_int(a + "embedding_length");
  const int heads = (int)f->get_int(a + "attention.head_count");
  const int kv_heads = (int)f->get_int(a + "attention.head_count_kv");
  const double eps = f->get_float(a + "attention.layer_norm_rms_epsilon");
  const double theta = f->get_float(a + "rope.freq_base");
  const int hd = hidden / heads, width = kv_heads * hd;
  const bool adjacent = arch == "llama";
  const Mat embd = read_matrix(*f, "token_embd.weight");
  const Mat out_w = f->find_tensor("output.weight") ? read_matrix(*f, "output.weight") : embd;
  const int n = (int)tokens.size();
  require(positions.size() == tokens.size(), "one position per token");

  // Keys in output order: every view row, then every computed token; `readable` drops superseded view rows.
  std::vector<int32_t> key_pos;
  std::vector<bool> readable;
  std::unordered_set<int32_t> later(positions.begin(), positions.end());  // positions written after a segment
  std::vector<std::vector<bool>> superseded(view.size());
  for (size_t s = view.size(); s-- > 0;) {
    for (int32_t p : view[s].positions) superseded[s].push_back(later.count(p) > 0);
    later.insert(view[s].positions.begin(), view[s].positions.end());
  }
  for (size_t s = 0; s < view.size(); ++s) {
    const size_t rows = view[s].positions.size();
    require((int)view[s].k.size() == n_layers && (int)view[s].v.size() == n_layers, "a view segment per layer");
    for (int l = 0; l < n_layers; ++l)
      require(view[s].k[l].size() == rows * width && view[s].v[l].size() == rows * width,
              "view rows of kv_heads * head_dim values");
    for (size_t r = 0; r < rows; ++r) {
      key_pos.push_back(view[s].positions[r]);
      readable.push_back(!superseded[s][r]);
    }
  }
  const int64_t n_view = (int64_t)key_pos.size();
  for (int i = 0; i < n; ++i) {
    key_pos.push_back(positions[i]);
    readable.push_back(true);
  }
  const int64_t m = (int64_t)key_pos.size();

  ReferenceTrace trace;
  trace.n_heads = heads;
  trace.n_kv_heads = kv_heads;
  trace.head_dim = hd;
  trace.n_view_rows = n_view;
  trace.n_rows = n;

  // Layer-condensed KV (kvfuse's lckv.* keys): layer l reads the KV of layer src[l]; a layer reading a later
  // layer, or every layer with mask_every_diagonal, does not read its own token; the span of such layers runs
  // `passes` times, each pass reading the KV the previous one wrote (zeros at first).
  std::vector<int> src(n_layers);
  for (int l = 0; l < n_layers; ++l) src[l] = l;
  if (f->has(a + "lckv.kv_layers")) {
    const std::vector<int64_t> map = f->get_int_array(a + "lckv.kv_layers");
    require((int)map.size() == n_layers, "lckv.kv_layers has one entry per layer");
    for (int l = 0; l < n_layers; ++l) src[l] = (int)map[l];
  }
  const bool mask_every = f->get_bool(a + "lckv.mask_every_diagonal", false);
  int first = n_layers, last = -1;
  for (int l = 0; l < n_layers; ++l)
    if (src[l] > l) first = std::min(first, l), last = std::max(last, src[l]);
  if (passes <= 0) passes = (int)f->get_int(a + "lckv.prompt_iterations", 9);
  if (passes <= 0 || passes > n) passes = std::max(n, 1);

  struct LayerWeights {
    Mat wq, wk, wv, wo, wg, wu, wd;
    Vec attn_norm, ffn_norm, bq, bk, bv;
  };
  std::vector<LayerWeights> lw(n_layers);
  for (int l = 0; l < n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& w = lw[l];
    w.wq = read_matrix(*f, p + "attn_q.weight");
    w.wo = read_matrix(*f, p + "attn_output.weight");
    if (src[l] == l) {
      w.wk = read_matrix(*f, p + "attn_k.weight");
      w.wv = read_matrix(*f, p + "attn_v.weight");
    }
    w.wg = read_matrix(*f, p + "ffn_gate.weight");
    w.wu = read_matrix(*f, p + "ffn_up.weight");
    w.wd = read_matrix(*f, p + "ffn_down.weight");
    w.attn_norm = read_vector(*f, p + "attn_norm.weight");
    w.ffn_norm = read_vector(*f, p + "ffn_norm.weight");
    const bool bias = f->find_tensor(p + "attn_q.bias") != nullptr;
    w.bq = bias ? read_vector(*f, p + "attn_q.bias") : Vec(heads * hd, 0.0);
    w.bk = bias && src[l] == l ? read_vector(*f, p + "attn_k.bias") : Vec(width, 0.0);
    w.bv = bias && src[l] == l ? read_vector(*f, p + "attn_v.bias") : Vec(width, 0.0);
  }

  // Per layer that computes KV, the computed tokens' K (pre-RoPE) and V: zeros until the layer has run.
  std::vector<Vec> own_k(n_layers, Vec((size_t)n * width, 0.0)), own_v(n_layers, Vec((size_t)n * width, 0.0));
  trace.probs.assign(n_layers, Vec());
  const auto run_layer = [&](int l, Mat& x) {
    const LayerWeights& w = lw[l];
    const int s = src[l];
    const bool no_diag = mask_every || s > l;
    Mat q(n);
    for (int i = 0; i < n; ++i) {
      const Vec xn = rms_norm(x[i], w.attn_norm, eps);
      q[i] = matvec(w.wq, xn);
      for (size_t j = 0; j < w.bq.size(); ++j) q[i][j] += w.bq[j];
      rope(q[i], heads, hd, positions[i], theta, adjacent);
      if (s != l) continue;
      Vec kk = matvec(w.wk, xn), vv = matvec(w.wv, xn);
      for (int j = 0; j < width; ++j) {
        own_k[l][(size_t)i * width + j] = kk[j] + w.bk[j];
        own_v[l][(size_t)i * width + j] = vv[j] + w.bv[j];
      }
    }
    // Keys (RoPE at each key's own position) and values of layer s: the view's rows, then the computed tokens'.
    Mat keys(m), values(m);
    int64_t at = 0;
    for (const ReferenceView& seg : view)
      for (size_t r = 0; r < seg.positions.size(); ++r, ++at) {
        keys[at].assign(seg.k[s].begin() + r * width, seg.k[s].begin() + (r + 1) * width);
        values[at].assign(seg.v[s].begin() + r * width, seg.v[s].begin() + (r + 1) * width);
        rope(keys[at], kv_heads, hd, seg.positions[r], theta, adjacent);
      }
    for (int i = 0; i < n; ++i, ++at) {
      keys[at].assign(own_k[s].begin() + (size_t)i * width, own_k[s].begin() + (size_t)(i + 1) * width);
      values[at].assign(own_v[s].begin() + (size_t)i * width, own_v[s].begin() + (size_t)(i + 1) * width);
      rope(keys[at], kv_heads, hd, positions[i], theta, adjacent);
    }
    Vec& probs = trace.probs[l];
    probs.assign((size_t)heads * n * m, 0.0);
    for (int i = 0; i < n; ++i) {
      const auto visible = [&](int64_t j) {
        return readable[j] && (no_diag ? key_pos[j] < positions[i] : key_pos[j] <= positions[i]);
      };
      Vec attn(heads * hd, 0.0);
      for (int h = 0; h < heads; ++h) {
        const int g = h / (heads / kv_heads);
        double* pw = &probs[((size_t)h * n + i) * m];
        Vec sc(m, 0.0);
        double mx = -1e300;
        bool any = false;
        for (int64_t j = 0; j < m; ++j) {
          if (!visible(j)) continue;
          for (int d = 0; d < hd; ++d) sc[j] += q[i][h * hd + d] * keys[j][g * hd + d];
          sc[j] /= std::sqrt((double)hd);
          mx = std::max(mx, sc[j]);
          any = true;
        }
        if (!any) continue;  // nothing to read: a zero attention output
        double sum = 0;
        for (int64_t j = 0; j < m; ++j)
          if (visible(j)) sum += (pw[j] = std::exp(sc[j] - mx));
        for (int64_t j = 0; j < m; ++j) {
          pw[j] /= sum;
          for (int d = 0; d < hd; ++d) attn[h * hd + d] += pw[j] * values[j][g * hd + d];
        }
      }
      const Vec o = matvec(w.wo, attn);
      for (int c = 0; c < hidden; ++c) x[i][c] += o[c];
    }
    for (int i = 0; i < n; ++i) {
      const Vec xn = rms_norm(x[i], w.ffn_norm, eps);
      const Vec gate = matvec(w.wg, xn), up = matvec(w.wu, xn);
      Vec act(gate.size());
      for (size_t j = 0; j < gate.size(); ++j) act[j] = gate[j] / (1.0 + std::exp(-gate[j])) * up[j];
      const Vec down = matvec(w.wd, act);
      for (int c = 0; c < hidden; ++c) x[i][c] += down[c];
    }
  };

  Mat x(n);
  for (int i = 0; i < n; ++i) x[i] = embd[tokens[i]];
  for (int l = 0; l < std::min(first, n_layers); ++l) run_layer(l, x);
  if (first <= last) {
    const Mat entering = x;
    for (int pass = 0; pass < passes; ++pass) {
      x = entering;
      for (int l = first; l <= last; ++l) run_layer(l, x);
    }
    for (int l = last + 1; l < n_layers; ++l) run_layer(l, x);
  }
  for (int l = 0; l < n_layers; ++l) {
    trace.k.push_back(own_k[src[l]]);
    trace.v.push_back(own_v[src[l]]);
  }
  const Vec out_norm = read_vector(*f, "output_norm.weight");
  trace.logits.resize(n);
  for (int i = 0; i < n; ++i) trace.logits[i] = matvec(out_w, rms_norm(x[i], out_norm, eps));
  return trace;
}

std::vector<std::vector<double>> reference_logits(const std::string& path, const std::vector<int32_t>& tokens) {
  std::vector<int32_t> positions(tokens.size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = (int32_t)i;
  return reference_forward(path, {}, tokens, positions).logits;
}

}  // namespace kvf::test
