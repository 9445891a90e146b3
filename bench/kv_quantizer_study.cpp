// kvf_kv_quantizer_study: candidate KV quantizers (compress/kv_quantizers.h) on a store's real KV. For each
// candidate: bits per value (K, V, both; exact, as the codec would store them), how much smaller than f16, the
// same with the codes at their entropy (each layer's code frequencies: what an ideal coder of the codes would write
// on disk; group parameters and kept values as stored), the relative RMS error of K and V per stored layer, and
// the relative error of attention outputs softmax(QK^T/sqrt(d))V with the reconstructed K and V against the
// original ones. Queries: stored K rows of another chunk (the next one drawn) at the same layer and KV head, no
// RoPE on either side (stored K has none), no mask. A screening on reconstruction and attention error, not an
// answer-quality measure. The data-fit codecs (fit, hfit) fit their levels first, to --calibration-chunks chunks
// the measurement does not read. Single-threaded.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <iterator>
#include <memory>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli.h"
#include "compress/kv_quantizers.h"
#include "core/error.h"
#include "store/chunk_kv.h"
#include "store/manifest.h"

namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

std::vector<std::string> default_codecs(const std::vector<int>& bits) {
  std::vector<std::string> out;
  for (int b : bits) {
    const std::string s = std::to_string(b);
    for (const char* c : {"uniform:%:32", "uniform:%:64", "hadamard:%:64", "hadamard:%:64:signs", "nf:%:32", "nf:%:64",
                          "hadamard:%:32:signs", "uniform:%:64:out=1/chunk", "uniform:%:64:out=1/group",
                          "nf:%:64:out=1/chunk", "uniform:%:64:keep=4", "hnf:%:64:signs", "hnf:%:32:signs"}) {
      std::string t = c;
      t.replace(t.find('%'), 1, s);
      out.push_back(t);
    }
  }
  return out;
}

struct Sums {  // per stored layer
  std::vector<double> k_err, k_norm, v_err, v_norm, a_err, a_norm;
  uint64_t k_bits = 0, v_bits = 0, values = 0, k_code_bits = 0, v_code_bits = 0;
  std::vector<std::array<uint64_t, 16>> k_codes, v_codes;  // how often each code occurs, per layer
  explicit Sums(int layers)
      : k_err((size_t)layers), k_norm((size_t)layers), v_err((size_t)layers), v_norm((size_t)layers),
        a_err((size_t)layers), a_norm((size_t)layers), k_codes((size_t)layers), v_codes((size_t)layers) {}
};

// Bits an ideal coder of each layer's codes, by their frequencies in that layer (zeroth order), would write.
double entropy_bits(const std::vector<std::array<uint64_t, 16>>& counts) {
  double bits = 0;
  for (const auto& c : counts) {
    uint64_t n = 0;
    for (uint64_t k : c) n += k;
    for (uint64_t k : c)
      if (k > 0) bits -= (double)k * std::log2((double)k / (double)n);
  }
  return bits;
}

// out[q, :] = softmax(q . k_r / sqrt(d)) v_r over rows r, for one head; q: [nq, d], k and v rows at `stride`.
void attention(const std::vector<float>& q, int64_t nq, const float* k, const float* v, int64_t rows, int64_t stride,
               int64_t d, std::vector<double>& out) {
  out.assign((size_t)(nq * d), 0.0);
  std::vector<double> p((size_t)rows);
  const double scale = 1.0 / std::sqrt((double)d);
  for (int64_t i = 0; i < nq; ++i) {
    double top = -INFINITY;
    for (int64_t r = 0; r < rows; ++r) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += (double)q[(size_t)(i * d + c)] * k[r * stride + c];
      p[(size_t)r] = dot * scale;
      top = std::max(top, p[(size_t)r]);
    }
    double sum = 0;
    for (auto& x : p) sum += (x = std::exp(x - top));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < d; ++c) out[(size_t)(i * d + c)] += p[(size_t)r] / sum * v[r * stride + c];
  }
}

// Layer l of a chunk's K or V ([rows][layers][width] as read) as one [rows, width] matrix.
std::vector<float> layer_matrix(const std::vector<float>& x, int64_t rows, int layers, int l, int64_t width) {
  std::vector<float> m((size_t)(rows * width));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(x.begin() + (r * layers + l) * width, width, m.begin() + r * width);
  return m;
}

using SpecPair = std::pair<kvf::KvQuantizerSpec, kvf::KvQuantizerSpec>;  // K's codec and V's
using FittedLevels = std::vector<std::vector<std::array<kvf::KvFittedLevels, 2>>>;  // [candidate][layer][K, V]

// The fit and hfit candidates' levels, fitted to up to `count` chunks of `rest` evenly spaced; `rows_read` gets
// the rows they hold. Candidates without a fitted codec get no levels (an empty list of layers).
FittedLevels fit_levels(const kvf::KvModeReader& reader, const std::vector<SpecPair>& specs,
                        const std::vector<uint64_t>& rest, size_t count, int64_t width, int64_t head_dim,
                        int64_t& rows_read) {
  const int layers = reader.layout().stored_layers;
  std::vector<std::vector<std::array<std::unique_ptr<kvf::KvLevelFitter>, 2>>> fitters(specs.size());
  for (size_t s = 0; s < specs.size(); ++s) {
    fitters[s].resize((size_t)layers);
    for (int l = 0; l < layers; ++l)
      for (int mi = 0; mi < 2; ++mi) {
        const kvf::KvQuantizerSpec& sp = mi == 0 ? specs[s].first : specs[s].second;
        if (kvf::kv_quantizer_is_fitted(sp))
          fitters[s][(size_t)l][(size_t)mi] = std::make_unique<kvf::KvLevelFitter>(sp.bits, width);
      }
  }
  const size_t nc = std::min(rest.size(), count);
  rows_read = 0;
  for (size_t ci = 0; ci < nc; ++ci) {
    const kvf::HostKv kv = reader.read(rest[ci * rest.size() / nc]);
    rows_read += kv.rows;
    for (int l = 0; l < layers; ++l) {
      const std::vector<float> k = layer_matrix(kv.k, kv.rows, layers, l, width),
                               v = layer_matrix(kv.v, kv.rows, layers, l, width);
      for (size_t s = 0; s < specs.size(); ++s)
        for (int mi = 0; mi < 2; ++mi)
          if (kvf::KvLevelFitter* f = fitters[s][(size_t)l][(size_t)mi].get())
            kvf::add_kv_calibration(mi == 0 ? specs[s].first : specs[s].second,
                                    mi == 0 ? kvf::KvMatrix::Key : kvf::KvMatrix::Value, (mi == 0 ? k : v).data(),
                                    kv.rows, width, head_dim, *f);
    }
  }
  FittedLevels fitted(specs.size());
  for (size_t s = 0; s < specs.size(); ++s) {
    bool any = false;
    for (const auto& pair : fitters[s]) any |= pair[0] || pair[1];
    if (!any) continue;
    fitted[s].resize((size_t)layers);
    for (int l = 0; l < layers; ++l)
      for (int mi = 0; mi < 2; ++mi)
        if (const kvf::KvLevelFitter* f = fitters[s][(size_t)l][(size_t)mi].get())
          fitted[s][(size_t)l][(size_t)mi] = f->fit();
  }
  return fitted;
}

struct Summary {
  double mean = 0, worst = 0;
  int worst_layer = 0;
  std::vector<double> per_layer;
};
Summary summarize(const std::vector<double>& err, const std::vector<double>& norm) {
  Summary s;
  for (size_t l = 0; l < err.size(); ++l) {
    const double e = norm[l] > 0 ? std::sqrt(err[l] / norm[l]) : 0.0;
    s.per_layer.push_back(e);
    s.mean += e / (double)err.size();
    if (e > s.worst) s.worst = e, s.worst_layer = (int)l;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_kv_quantizer_study: candidate KV quantizers' bits and errors on a store's real KV"};
  std::string store, mode = "similarity";
  std::vector<std::string> codecs;
  std::vector<int> bits = {4, 3, 2};
  int chunks = 24, queries = 32, calibration_chunks = 64;
  bool json = false;
  app.add_option("--store", store, "a store with KV of --mode")->required();
  app.add_option("--mode", mode, "the KV mode to read (an f16 or bf16 prefill mode)")->capture_default_str();
  app.add_option("--codec", codecs,
                 "CODEC:BITS:GROUP[:signs][:keep=N][:out=P/group|chunk] (compress/kv_quantizers.h) for K and V, or "
                 "K's+V's; repeatable; default: a fixed list at each of --bits");
  app.add_option("--bits", bits, "bits of the default list")->capture_default_str();
  app.add_option("--chunks", chunks, "chunks read, evenly spaced over the mode's chunk ids in ascending order")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  app.add_option("--queries", queries, "query rows per chunk, layer and KV head (K rows of the next chunk drawn)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--calibration-chunks", calibration_chunks,
                 "chunks the fit and hfit codecs fit their levels to, evenly spaced over the chunks not measured")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_flag("--json", json, "print one JSON object instead of the table");
  app.footer(
      "Example:\n"
      "  kvf_kv_quantizer_study --store /tmp/sb/store --chunks 24 --codec uniform:2:64 --codec hadamard:2:64:signs\n");
  app.callback([&] {
    const kvf::Manifest manifest = kvf::load_manifest(store);
    const kvf::KvModeReader reader(store, manifest, mode, manifest.model_fingerprint);
    KVF_CHECK(reader.chunks() >= 2, store, ": mode '", mode, "' has ", reader.chunks(), " chunks; 2 or more needed");
    const kvf::KvShardLayout& layout = reader.layout();
    KVF_CHECK(!layout.low_bit() && layout.dtype != kvf::KvDtype::Int8, store, ": mode '", mode,
              "' is quantized already; study an f16 or bf16 mode");
    const int layers = layout.stored_layers;
    const int64_t head_dim = layout.head_dim, heads = layout.kv_heads, width = heads * head_dim;
    if (codecs.empty()) codecs = default_codecs(bits);
    // K's codec and V's: one spec for both, or "KSPEC+VSPEC".
    std::vector<SpecPair> specs;
    for (const std::string& c : codecs) {
      const size_t plus = c.find('+');
      const std::string kc = c.substr(0, plus), vc = plus == std::string::npos ? c : c.substr(plus + 1);
      specs.emplace_back(kvf::parse_kv_quantizer(kc), kvf::parse_kv_quantizer(vc));
      kvf::check_kv_quantizer(specs.back().first, head_dim, "--codec " + c);
      kvf::check_kv_quantizer(specs.back().second, head_dim, "--codec " + c);
    }
    const auto name_of = [&](size_t s) {
      const std::string kn = kvf::kv_quantizer_name(specs[s].first), vn = kvf::kv_quantizer_name(specs[s].second);
      return kn == vn ? kn : kn + "+" + vn;
    };
    std::vector<uint64_t> ids = reader.ids();
    std::sort(ids.begin(), ids.end());
    const size_t n = std::min(ids.size(), (size_t)chunks);
    std::vector<uint64_t> drawn;
    for (size_t i = 0; i < n; ++i) drawn.push_back(ids[i * ids.size() / n]);

    // Fitted levels per candidate, layer and matrix (K, V), from chunks the measurement does not read.
    int64_t calibration_read = 0;
    bool any_fitted = false;
    for (const auto& [ks, vs] : specs) any_fitted |= kvf::kv_quantizer_is_fitted(ks) || kvf::kv_quantizer_is_fitted(vs);
    std::vector<uint64_t> rest;
    std::set_difference(ids.begin(), ids.end(), drawn.begin(), drawn.end(), std::back_inserter(rest));
    KVF_CHECK(!any_fitted || !rest.empty(), store, ": every chunk is measured; none is left to fit the levels to");
    const FittedLevels fitted =
        any_fitted ? fit_levels(reader, specs, rest, (size_t)calibration_chunks, width, head_dim, calibration_read)
                   : FittedLevels(specs.size());
    const auto levels_of = [&](size_t s, int l, int mi) -> const kvf::KvFittedLevels* {
      return fitted[s].empty() ? nullptr : &fitted[s][(size_t)l][(size_t)mi];
    };

    std::vector<Sums> sums(specs.size(), Sums(layers));
    int64_t rows_total = 0;
    kvf::HostKv next = reader.read(drawn[0]);
    for (size_t ci = 0; ci < n; ++ci) {
      const kvf::HostKv kv = std::move(next);
      next = reader.read(drawn[(ci + 1) % n]);  // the queries' chunk
      const int64_t rows = kv.rows;
      rows_total += rows;
      const int64_t nq = std::min<int64_t>(queries, next.rows);
      for (int l = 0; l < layers; ++l) {
        const std::vector<float> k = layer_matrix(kv.k, rows, layers, l, width),
                                 v = layer_matrix(kv.v, rows, layers, l, width);
        // Queries and reference outputs per head.
        std::vector<std::vector<float>> q((size_t)heads);
        std::vector<std::vector<double>> ref((size_t)heads);
        for (int64_t h = 0; h < heads; ++h) {
          for (int64_t i = 0; i < nq; ++i) {
            const int64_t r = i * next.rows / nq;
            for (int64_t c = 0; c < head_dim; ++c)
              q[(size_t)h].push_back(next.k[(size_t)((r * layers + l) * width + h * head_dim + c)]);
          }
          attention(q[(size_t)h], nq, k.data() + h * head_dim, v.data() + h * head_dim, rows, width, head_dim,
                    ref[(size_t)h]);
        }
        std::vector<double> got;
        for (size_t s = 0; s < specs.size(); ++s) {
          const kvf::KvQuantized kq = kvf::quantize_kv_matrix(specs[s].first, kvf::KvMatrix::Key, k.data(), rows,
                                                              width, head_dim, levels_of(s, l, 0));
          const kvf::KvQuantized vq = kvf::quantize_kv_matrix(specs[s].second, kvf::KvMatrix::Value, v.data(), rows,
                                                              width, head_dim, levels_of(s, l, 1));
          Sums& a = sums[s];
          a.k_bits += kq.bits;
          a.v_bits += vq.bits;
          a.k_code_bits += (uint64_t)(rows * width) * (uint64_t)specs[s].first.bits;
          a.v_code_bits += (uint64_t)(rows * width) * (uint64_t)specs[s].second.bits;
          a.values += (uint64_t)(rows * width);
          for (uint8_t c : kq.codes) ++a.k_codes[(size_t)l][c];
          for (uint8_t c : vq.codes) ++a.v_codes[(size_t)l][c];
          for (size_t i = 0; i < k.size(); ++i) {
            a.k_err[(size_t)l] += (double)(kq.values[i] - k[i]) * (kq.values[i] - k[i]);
            a.k_norm[(size_t)l] += (double)k[i] * k[i];
            a.v_err[(size_t)l] += (double)(vq.values[i] - v[i]) * (vq.values[i] - v[i]);
            a.v_norm[(size_t)l] += (double)v[i] * v[i];
          }
          for (int64_t h = 0; h < heads; ++h) {
            attention(q[(size_t)h], nq, kq.values.data() + h * head_dim, vq.values.data() + h * head_dim, rows, width,
                      head_dim, got);
            for (size_t i = 0; i < got.size(); ++i) {
              a.a_err[(size_t)l] += (got[i] - ref[(size_t)h][i]) * (got[i] - ref[(size_t)h][i]);
              a.a_norm[(size_t)l] += ref[(size_t)h][i] * ref[(size_t)h][i];
            }
          }
        }
      }
    }

    nlohmann::json out = {{"cpu", cpu_name()},
                          {"store", store},
                          {"model", manifest.model_name},
                          {"mode", mode},
                          {"chunks", n},
                          {"rows", rows_total},
                          {"calibration_rows", calibration_read},
                          {"stored_layers", layers},
                          {"kv_heads", heads},
                          {"head_dim", head_dim},
                          {"queries_per_head", queries},
                          {"rope", "none: stored K and the queries (stored K of the next chunk drawn) unrotated"},
                          {"candidates", nlohmann::json::array()}};
    const auto summary_json = [](const Summary& s) {
      return nlohmann::json{{"mean", s.mean}, {"worst", s.worst}, {"worst_layer", s.worst_layer},
                            {"per_layer", s.per_layer}};
    };
    if (!json) {
      std::printf("CPU: %s\nstore: %s (%s), mode %s: %zu chunks, %lld rows, %d stored layers, %lld KV heads of %lld\n",
                  cpu_name().c_str(), store.c_str(), manifest.model_name.c_str(), mode.c_str(), n,
                  (long long)rows_total, layers, (long long)heads, (long long)head_dim);
      std::printf("attention: %d query rows per chunk, layer and KV head (stored K of the next chunk), no RoPE\n",
                  queries);
      if (any_fitted)
        std::printf("fit/hfit levels: fitted per layer and channel to %lld rows of chunks not measured\n",
                    (long long)calibration_read);
      std::printf("\n");
      std::printf("| codec | bits/value K | V | K+V | x smaller than f16 | entropy-coded bits/value | x | K rel RMS "
                  "mean | worst | V rel RMS mean | worst | attn out rel err mean | worst (layer) |\n|---|---:|---:|"
                  "---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    for (size_t s = 0; s < specs.size(); ++s) {
      const Sums& a = sums[s];
      const double bk = (double)a.k_bits / (double)a.values, bv = (double)a.v_bits / (double)a.values;
      const double both = (bk + bv) / 2;
      // Entropy-coded: the codes at their entropy, everything else (group parameters, kept values) as stored.
      const double ek = ((double)a.k_bits - (double)a.k_code_bits + entropy_bits(a.k_codes)) / (double)a.values,
                   ev = ((double)a.v_bits - (double)a.v_code_bits + entropy_bits(a.v_codes)) / (double)a.values;
      const double coded = (ek + ev) / 2;
      const Summary ks = summarize(a.k_err, a.k_norm), vs = summarize(a.v_err, a.v_norm),
                    as = summarize(a.a_err, a.a_norm);
      out["candidates"].push_back({{"codec", name_of(s)},
                                   {"bits_per_value_k", bk},
                                   {"bits_per_value_v", bv},
                                   {"bits_per_value", both},
                                   {"x_smaller_than_f16", 16.0 / both},
                                   {"entropy_coded_bits_per_value", coded},
                                   {"entropy_coded_x_smaller_than_f16", 16.0 / coded},
                                   {"k_rel_rms", summary_json(ks)},
                                   {"v_rel_rms", summary_json(vs)},
                                   {"attention_rel_err", summary_json(as)}});
      if (!json)
        std::printf("| %s | %.3f | %.3f | %.3f | %.2f | %.3f | %.2f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f (%d) |\n",
                    name_of(s).c_str(), bk, bv, both, 16.0 / both, coded, 16.0 / coded, ks.mean, ks.worst, vs.mean,
                    vs.worst, as.mean, as.worst, as.worst_layer);
    }
    if (json) std::printf("%s\n", out.dump(1).c_str());
  });
  return kvf::cli::run_app(app, argc, argv);
}
