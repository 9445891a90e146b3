// The forward-pass rule (DESIGN.md §3) on tiny random models: against a naive double-precision reference, and
// the invariants every kvprep/kvrun method relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "support/test_values.h"
#include "core/low_bit_kv.h"
#include "model/decoder.h"
#include "store/chunk_kv.h"
#include "model/generate.h"
#include "support/reference_decoder.h"
#include "support/tiny_model.h"

namespace kvf {
namespace {

using test::iota_positions;
using test::max_abs_diff;
using test::random_tokens;

std::vector<int32_t> all_rows(int n) { return iota_positions(n, 0); }

std::vector<float> host(Backend& b, const Tensor& t) {
  std::vector<float> v(t.numel());
  b.copy_to_host(t, v.data(), v.size() * sizeof(float));
  return v;
}

class DecoderForward : public ::testing::TestWithParam<std::tuple<std::string, ComputeMode>> {
 protected:
  void SetUp() override {
    spec.arch = std::get<0>(GetParam());
    path = test::write_tiny_model(spec);
    backend = make_cpu_backend();
    decoder = Decoder::load(path, *backend, std::get<1>(GetParam()));
    vocab = decoder->config().vocab;
  }
  ForwardResult prefill(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                        std::vector<const KvSegment*> view = {}) {
    ForwardRequest r;
    r.tokens = tokens;
    r.positions = positions;
    r.view = std::move(view);
    r.logit_rows = all_rows((int)tokens.size());
    r.return_kv = true;
    return decoder->forward(r);
  }

  test::TinyModelSpec spec;
  std::string path;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  int vocab = 0;
};

TEST_P(DecoderForward, MatchesNaiveDoublePrecisionReference) {
  const auto tokens = random_tokens(37, vocab, 1);
  const ForwardResult out = prefill(tokens, iota_positions(37));
  const auto ref = test::reference_logits(path, tokens);
  double worst = 0, err_sq = 0, ref_sq = 0;
  for (size_t i = 0; i < tokens.size(); ++i)
    for (int v = 0; v < vocab; ++v) {
      const double d = out.logits[i * vocab + v] - ref[i][v];
      worst = std::max(worst, std::abs(d));
      err_sq += d * d;
      ref_sq += ref[i][v] * ref[i][v];
    }
  if (decoder->compute_mode() == ComputeMode::F32) {
    EXPECT_LT(worst, 2e-4) << "largest |logit difference| against the double-precision reference";
  } else {  // bf16 weights and activations in every matmul (measured: NMSE 1-2e-4 on these models)
    EXPECT_LT(err_sq / ref_sq, 1e-3) << "logit NMSE against the double-precision reference (largest |difference| "
                                     << worst << ")";
  }
}

TEST_P(DecoderForward, PrefillInPiecesOverViewsEqualsOneCall) {
  const auto tokens = random_tokens(50, vocab, 2);
  const ForwardResult whole = prefill(tokens, iota_positions(50));
  const auto piece = [&](int b, int e) {
    return std::vector<int32_t>(tokens.begin() + b, tokens.begin() + e);
  };
  const ForwardResult a = prefill(piece(0, 17), iota_positions(17, 0));
  const ForwardResult b = prefill(piece(17, 30), iota_positions(13, 17), {&a.kv});
  const ForwardResult c = prefill(piece(30, 50), iota_positions(20, 30), {&a.kv, &b.kv});
  std::vector<float> pieces = a.logits;
  pieces.insert(pieces.end(), b.logits.begin(), b.logits.end());
  pieces.insert(pieces.end(), c.logits.begin(), c.logits.end());
  EXPECT_LT(max_abs_diff(pieces, whole.logits), 1e-4);  // f32 sums in another order, logits of size ~10
  // The returned K (pre-RoPE) and V of each piece are the whole prefill's rows.
  for (int l = 0; l < decoder->config().n_layers; ++l) {
    const auto wk = host(*backend, whole.kv.k[l]), ck = host(*backend, c.kv.k[l]);
    const std::vector<float> tail(wk.end() - (long)ck.size(), wk.end());
    EXPECT_LT(max_abs_diff(tail, ck), 1e-5) << "layer " << l;
  }
}

TEST_P(DecoderForward, RopeRemovedThenReappliedEqualsRopeAtTheNewPosition) {
  const auto& c = decoder->config();
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  const int n = 9;
  std::vector<float> x((size_t)n * c.n_kv_heads * c.head_dim);
  for (float& v : x) v = d(rng);
  auto rotate = [&](std::vector<float> data, const std::vector<int32_t>& pos, bool inverse) {
    Tensor t = backend->empty(DType::F32, {n, c.n_kv_heads, c.head_dim});
    backend->copy_from_host(t, data.data(), data.size() * 4);
    Tensor p = backend->empty(DType::I32, {n});
    backend->copy_from_host(p, pos.data(), pos.size() * 4);
    backend->rope_inplace(t, p, decoder->rope(), inverse);
    return host(*backend, t);
  };
  const std::vector<int32_t> p1{0, 1, 5, 17, 100, 255, 300, 411, 511}, p2{3, 9, 2, 0, 460, 77, 12, 500, 1};
  const auto moved = rotate(rotate(rotate(x, p1, false), p1, true), p2, false);
  EXPECT_LT(max_abs_diff(moved, rotate(x, p2, false)), 2e-5);
  EXPECT_LT(max_abs_diff(rotate(rotate(x, p1, false), p1, true), x), 2e-5);
}

TEST_P(DecoderForward, ViewMovedToNewPositionsEqualsRecomputingThere) {
  const auto ctx = random_tokens(24, vocab, 4), question = random_tokens(6, vocab, 5);
  std::vector<int32_t> both = ctx;
  both.insert(both.end(), question.begin(), question.end());
  // Context KV computed at 0..23, then placed at 200..223 without recomputing: stored K carries no RoPE.
  ForwardResult stored = prefill(ctx, iota_positions(24, 0));
  stored.kv.positions = iota_positions(24, 200);
  const ForwardResult moved = prefill(question, iota_positions(6, 224), {&stored.kv});
  const ForwardResult direct = prefill(both, iota_positions(30, 200));
  const std::vector<float> direct_q(direct.logits.end() - 6L * vocab, direct.logits.end());
  if (decoder->compute_mode() == ComputeMode::F32) {
    EXPECT_LT(max_abs_diff(moved.logits, direct_q), 5e-5);
  } else {  // 6 rows take the few-rows kernels, 30 the bf16 panels, so a bf16 rounding may fall the other way
    // (measured: NMSE 7e-6 where one does; a wrong position gives 0.1 or more)
    double err_sq = 0, ref_sq = 0;
    for (size_t i = 0; i < direct_q.size(); ++i)
      err_sq += (moved.logits[i] - direct_q[i]) * (moved.logits[i] - direct_q[i]), ref_sq += direct_q[i] * direct_q[i];
    EXPECT_LT(err_sq / ref_sq, 1e-4) << "largest |difference| " << max_abs_diff(moved.logits, direct_q);
  }
}

TEST_P(DecoderForward, SupersededViewRowsAreReplacedByTheComputedTokens) {
  const auto ctx = random_tokens(20, vocab, 6), question = random_tokens(5, vocab, 7);
  const ForwardResult stored = prefill(ctx, iota_positions(20));
  // Recompute context tokens 3, 8 and 15 with the question: their stored rows must not be read.
  const std::vector<int32_t> picked{3, 8, 15};
  ForwardRequest r;
  for (int32_t p : picked) {
    r.tokens.push_back(ctx[p]);
    r.positions.push_back(p);
  }
  for (int i = 0; i < 5; ++i) {
    r.tokens.push_back(question[i]);
    r.positions.push_back(20 + i);
  }
  r.logit_rows = all_rows((int)r.tokens.size());
  r.probe_layers = {0, 1};
  r.probe_rows = {3, 4, 5, 6, 7};
  r.view = {&stored.kv};
  const ForwardResult with_supersede = decoder->forward(r);

  // The same request over a view from which those rows were cut by hand.
  KvSegment cut;
  std::vector<int32_t> keep;
  for (int i = 0; i < 20; ++i)
    if (std::find(picked.begin(), picked.end(), i) == picked.end()) keep.push_back(i);
  Tensor rows = backend->empty(DType::I32, {(int64_t)keep.size()});
  backend->copy_from_host(rows, keep.data(), keep.size() * 4);
  for (size_t l = 0; l < stored.kv.k.size(); ++l) {
    Tensor k = backend->empty(DType::F32, {(int64_t)keep.size(), stored.kv.k[l].dim(1), stored.kv.k[l].dim(2)});
    Tensor v = backend->empty(DType::F32, k.shape);
    backend->gather_rows(stored.kv.k[l], rows, k);
    backend->gather_rows(stored.kv.v[l], rows, v);
    cut.k.push_back(k);
    cut.v.push_back(v);
  }
  for (int32_t i : keep) cut.positions.push_back(i);
  r.view = {&cut};
  const ForwardResult by_hand = decoder->forward(r);
  EXPECT_EQ(with_supersede.logits, by_hand.logits);

  // Probes: superseded rows get nothing; every probed query row's weights sum to one per head.
  for (size_t i = 0; i < r.probe_layers.size(); ++i) {
    const auto& colsum = with_supersede.attn_colsum[i];
    ASSERT_EQ(colsum.size(), 20u + r.tokens.size());
    for (int32_t p : picked) EXPECT_EQ(colsum[p], 0.0f);
    double total = 0;
    for (float v : colsum) total += v;
    EXPECT_NEAR(total, r.probe_rows.size() * decoder->config().n_heads, 1e-3);
  }
}

// A pass without logits or hidden states skips what only the last layer's output needs; its KV and probes are those
// of the same pass run in full, bit for bit: a probe on the last layer (fusion), on an early last layer with
// run_layers (a3), and none (cacheblend, kvprep's chunk prefill).
TEST_P(DecoderForward, PassesWithoutLogitsReturnTheKvAndProbesOfAFullPass) {
  const int n_layers = decoder->config().n_layers;
  const auto ctx = random_tokens(15, vocab, 40), question = random_tokens(6, vocab, 41);
  const ForwardResult stored = prefill(ctx, iota_positions(15));
  for (const auto& [run_layers, probes] : std::vector<std::pair<int, std::vector<int>>>{
           {0, {n_layers - 1}}, {2, {1}}, {2, {}}, {0, {}}}) {
    ForwardRequest r;
    r.tokens = {ctx[4], ctx[9]};
    r.positions = {4, 9};
    for (int i = 0; i < 6; ++i) {
      r.tokens.push_back(question[i]);
      r.positions.push_back(15 + i);
    }
    r.view = {&stored.kv};
    r.return_kv = true;
    r.run_layers = run_layers;
    r.probe_layers = probes;
    if (!probes.empty()) r.probe_rows = {2, 3, 4, 5, 6, 7};
    const ForwardResult lean = decoder->forward(r);
    r.return_hidden = true;  // its output read: every layer runs in full
    const ForwardResult whole = decoder->forward(r);
    EXPECT_EQ(lean.attn_colsum, whole.attn_colsum) << "run_layers " << run_layers;
    const int layers = run_layers ? run_layers : n_layers;
    for (int l = 0; l < layers; ++l) {
      EXPECT_EQ(host(*backend, lean.kv.k[l]), host(*backend, whole.kv.k[l])) << "layer " << l;
      EXPECT_EQ(host(*backend, lean.kv.v[l]), host(*backend, whole.kv.v[l])) << "layer " << l;
    }
  }
}

// Several segments rotated in one call (a query's placed chunks) hold exactly the keys each rotated alone would,
// every layer, in one allocation.
TEST_P(DecoderForward, SegmentsRotatedTogetherEqualEachRotatedAlone) {
  const ForwardResult ka = prefill(random_tokens(12, vocab, 20), iota_positions(12)),
                      kb = prefill(random_tokens(9, vocab, 21), iota_positions(9));
  const std::vector<KvSegment> segs{placed_at(ka.kv, 0), placed_at(kb.kv, 12), placed_at(ka.kv, 21)};
  const std::vector<KvSegment> together = decoder->with_roped_keys(segs);
  ASSERT_EQ(together.size(), segs.size());
  for (size_t s = 0; s < segs.size(); ++s) {
    const KvSegment alone = decoder->with_roped_keys(segs[s]);
    EXPECT_EQ(together[s].positions, segs[s].positions);
    ASSERT_EQ(together[s].k_roped.size(), alone.k_roped.size());
    for (size_t l = 0; l < alone.k_roped.size(); ++l) {
      EXPECT_EQ(host(*backend, together[s].k_roped[l]), host(*backend, alone.k_roped[l])) << s << ", layer " << l;
      EXPECT_EQ(together[s].k_roped[l].storage, together[0].k_roped[0].storage) << s << ", layer " << l;
      EXPECT_EQ(host(*backend, together[s].k[l]), host(*backend, segs[s].k[l])) << "the stored keys are kept";
    }
  }
}

// Keys rotated once per segment (Decoder::with_roped_keys) read exactly as keys rotated in every layer: mixed with
// unrotated segments, with superseded rows, and with probes.
TEST_P(DecoderForward, SegmentsWithRotatedKeysGiveTheSameResultsBitForBit) {
  const auto a = random_tokens(12, vocab, 20), b = random_tokens(9, vocab, 21), c = random_tokens(7, vocab, 22);
  const ForwardResult ka = prefill(a, iota_positions(12)), kb = prefill(b, iota_positions(9)),
                      kc = prefill(c, iota_positions(7));
  const KvSegment pa = placed_at(ka.kv, 0), pb = placed_at(kb.kv, 12), pc = placed_at(kc.kv, 21);
  const KvSegment ra = decoder->with_roped_keys(pa), rc = decoder->with_roped_keys(pc);
  ForwardRequest r;
  r.tokens = {b[2], b[5], a[0], a[1], a[2]};
  r.positions = {14, 17, 28, 29, 30};  // two context rows recomputed, then the question
  r.logit_rows = all_rows(5);
  r.return_kv = true;
  r.probe_layers = {0};
  r.probe_rows = {2, 3, 4};
  r.view = {&pa, &pb, &pc};
  const ForwardResult plain = decoder->forward(r);
  r.view = {&ra, &pb, &rc};
  const ForwardResult roped = decoder->forward(r);
  EXPECT_EQ(plain.logits, roped.logits);
  EXPECT_EQ(plain.attn_colsum, roped.attn_colsum);
  for (size_t l = 0; l < plain.kv.k.size(); ++l) EXPECT_EQ(host(*backend, plain.kv.k[l]), host(*backend, roped.kv.k[l]));
  // A query's own buffer made with the RoPE spec keeps its rows' keys rotated as they are appended.
  KvBuffer own(*backend, decoder->config().n_layers, decoder->config().n_kv_heads, decoder->config().head_dim, 16,
               &decoder->rope());
  own.append(plain.kv);
  KvSegment own_plain = own.view();
  ASSERT_EQ(own_plain.k_roped.size(), own_plain.k.size());
  own_plain.k_roped.clear();
  const KvSegment own_roped = own.view();
  ForwardRequest step;
  step.tokens = {c[3]};
  step.positions = {31};
  step.logit_rows = {0};
  step.view = {&ra, &pb, &rc, &own_roped};
  const ForwardResult step_roped = decoder->forward(step);
  step.view = {&pa, &pb, &pc, &own_plain};
  EXPECT_EQ(step_roped.logits, decoder->forward(step).logits);
  // Moving a segment drops its rotated keys, which were valid only at the old positions.
  EXPECT_TRUE(placed_at(ra, 5).k_roped.empty());
  EXPECT_EQ(ra.slice(2, 4).k_roped.size(), ra.k_roped.size());
}

// Stored low-bit KV read where it lies (KvSegment::encoded: decoded by the key gather, layer by layer) gives exactly
// what the same rows decoded to f32 when read give: prefill with superseded rows, probes, sliced segments, and a
// decoding step (the few-rows attention path of the fast mode).
TEST_P(DecoderForward, EncodedSegmentsReadExactlyAsTheirDecodedRows) {
  const auto a = random_tokens(21, vocab, 30), b = random_tokens(13, vocab, 31);
  const ForwardResult ka = prefill(a, iota_positions(21)), kb = prefill(b, iota_positions(13));
  const Shape row_shape{decoder->config().n_kv_heads, decoder->config().head_dim};
  const int n_layers = decoder->config().n_layers;
  for (const int bits : {4, 3, 2}) {
    const LowBitSpec low_bit{bits, 8, 2};
    // Each chunk both ways: encoded as a store keeps it, and decoded to f32 as a load would.
    const auto both = [&](const KvSegment& computed, int32_t offset) {
      const HostKv kv = segment_to_host(computed, *backend);
      auto enc = std::make_shared<LowBitRows>();
      enc->spec = low_bit;
      enc->rows = kv.rows;
      enc->stored_layers = n_layers;
      enc->kv_heads = (int)row_shape[0];
      enc->head_dim = (int)row_shape[1];
      enc->layer_map = iota_positions(n_layers, 0);
      encode_low_bit_chunk(low_bit, kv.k.data(), kv.v.data(), kv.rows, enc->width(), enc->bytes);
      HostKv decoded = kv;
      EXPECT_TRUE(decode_low_bit_chunk(low_bit, enc->bytes.data(), kv.rows, enc->width(), decoded.k.data(),
                                       decoded.v.data()));
      KvShardLayout layout;
      layout.kv_heads = enc->kv_heads;
      layout.head_dim = enc->head_dim;
      layout.stored_layers = n_layers;
      layout.layer_map = enc->layer_map;
      KvSegment encoded;
      encoded.positions = kv.positions;
      encoded.encoded = enc;
      const KvSegment plain = host_to_segment(decoded, layout, *backend, kv.positions);
      EXPECT_EQ(segment_to_host(encoded, *backend).k, decoded.k) << bits << " bits";
      return std::make_pair(placed_at(encoded, offset), decoder->with_roped_keys(placed_at(plain, offset)));
    };
    const auto [ea, da] = both(ka.kv, 0);
    const auto [eb, db] = both(kb.kv, 21);
    const KvSegment ea_tail = ea.slice(5, 16), da_tail = da.slice(5, 16);  // rows 5.. of chunk a
    ForwardRequest r;
    r.tokens = {a[7], b[0], b[11], a[1], a[2]};
    r.positions = {7, 21, 32, 34, 35};  // three context rows recomputed (one a kept f16 row), then the question
    r.logit_rows = all_rows(5);
    r.return_kv = true;
    r.probe_layers = {0, n_layers - 1};
    r.probe_rows = {3, 4};
    r.view = {&ea_tail, &eb};
    const ForwardResult from_encoded = decoder->forward(r);
    r.view = {&da_tail, &db};
    const ForwardResult from_decoded = decoder->forward(r);
    EXPECT_EQ(from_encoded.logits, from_decoded.logits) << bits << " bits";
    EXPECT_EQ(from_encoded.attn_colsum, from_decoded.attn_colsum) << bits << " bits";
    ForwardRequest step;
    step.tokens = {b[4]};
    step.positions = {36};
    step.logit_rows = {0};
    step.view = {&ea, &eb};
    const ForwardResult step_encoded = decoder->forward(step);
    step.view = {&da, &db};
    EXPECT_EQ(step_encoded.logits, decoder->forward(step).logits) << bits << " bits";
  }
}

TEST_P(DecoderForward, RecomputingEveryContextRowEqualsFullPrefill) {
  const auto ctx = random_tokens(30, vocab, 8), question = random_tokens(4, vocab, 9);
  std::vector<int32_t> both = ctx;
  both.insert(both.end(), question.begin(), question.end());
  // Stored KV from another context (the chunk alone at other positions) is fully superseded.
  const ForwardResult stored = prefill(ctx, iota_positions(30));
  const ForwardResult full = prefill(both, iota_positions(34));
  const ForwardResult recomputed = prefill(both, iota_positions(34), {&stored.kv});
  EXPECT_EQ(recomputed.logits, full.logits);
}

TEST_P(DecoderForward, RaggedBatchEqualsSeparateCalls) {
  const auto t1 = random_tokens(11, vocab, 10), t2 = random_tokens(23, vocab, 11);
  const ForwardResult base = prefill(t1, iota_positions(11));
  ForwardRequest r1, r2;
  r1.tokens = t2;
  r1.positions = iota_positions(23, 11);
  r1.view = {&base.kv};
  r1.logit_rows = {0, 22};
  r2.tokens = t1;
  r2.positions = iota_positions(11);
  r2.logit_rows = all_rows(11);
  const auto batched = decoder->forward(std::vector<ForwardRequest>{r1, r2});
  // GEMM shapes differ. In the fast mode the 2 logit rows of r1 alone take the few-rows path (f32 dots) and the
  // 13 of the batch the bf16 panels (measured: 0.035 apart); every other row is computed identically.
  const float tol = decoder->compute_mode() == ComputeMode::F32 ? 1e-4f : 0.1f;
  EXPECT_LT(max_abs_diff(batched[0].logits, decoder->forward(r1).logits), tol);
  EXPECT_LT(max_abs_diff(batched[1].logits, decoder->forward(r2).logits), tol);
}

TEST_P(DecoderForward, GreedyGenerationEqualsArgmaxOfFullRecompute) {
  std::vector<int32_t> seq = random_tokens(8, vocab, 12);
  const std::vector<int32_t> prompt = seq;
  GreedyOptions opts;
  opts.max_new_tokens = 10;
  const GreedyResult g = generate_greedy(*decoder, prompt, opts);
  ASSERT_EQ(g.tokens.size(), 10u);
  for (int step = 0; step < 10; ++step) {
    ForwardRequest r;
    r.tokens = seq;
    r.positions = iota_positions((int)seq.size());
    r.logit_rows = {(int32_t)seq.size() - 1};
    const auto out = decoder->forward(r);
    const int32_t next = argmax(out.logits.data(), vocab);
    EXPECT_EQ(next, g.tokens[step]) << "step " << step;
    seq.push_back(next);
  }
}

TEST_P(DecoderForward, BatchedDecodingGivesEachSequenceItsOwnGreedyTokens) {
  // Three prompts of different lengths, one stopping early by an end token and one by a stop rule: stepped
  // together they give the tokens each gives alone.
  const std::vector<std::vector<int32_t>> prompts = {random_tokens(9, vocab, 21), random_tokens(30, vocab, 22),
                                                     random_tokens(4, vocab, 23)};
  std::vector<GreedyOptions> options(3);
  for (GreedyOptions& o : options) o.max_new_tokens = 12;
  options[1].is_end_token = [](int32_t id) { return id % 7 == 0; };
  options[2].should_stop = [](const std::vector<int32_t>& t) { return t.size() == 5; };
  std::vector<ForwardResult> prefills;
  for (const auto& p : prompts) prefills.push_back(prefill(p, iota_positions((int)p.size())));
  const auto job_for = [&](size_t i, std::vector<std::unique_ptr<KvBuffer>>& buffers) {
    const LlamaConfig& c = decoder->config();
    buffers.push_back(std::make_unique<KvBuffer>(*backend, c.n_layers, c.n_kv_heads, c.head_dim, 64));
    buffers.back()->append(prefills[i].kv);
    DecodeJob job;
    job.own = buffers.back().get();
    job.first = argmax(&prefills[i].logits[(prompts[i].size() - 1) * vocab], vocab);
    job.next_position = (int32_t)prompts[i].size();
    job.options = options[i];
    return job;
  };
  std::vector<std::unique_ptr<KvBuffer>> buffers;
  std::vector<DecodeJob> together;
  for (size_t i = 0; i < prompts.size(); ++i) together.push_back(job_for(i, buffers));
  decode_greedy_batch(*decoder, together);
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<DecodeJob> alone{job_for(i, buffers)};
    decode_greedy_batch(*decoder, alone);
    EXPECT_EQ(together[i].result.tokens, alone[0].result.tokens) << "sequence " << i;
    EXPECT_EQ(together[i].result.ended, alone[0].result.ended) << "sequence " << i;
  }
  EXPECT_EQ(together[0].result.tokens.size(), 12u);
  EXPECT_EQ(together[2].result.tokens.size(), 5u);
  EXPECT_TRUE(together[2].result.ended);
}

TEST_P(DecoderForward, DecodingStepGivesEachSequenceItsLogitsAlone) {
  // Twelve sequences, one new token each (more rows than the CPU's few-row paths take, fewer than a panel of
  // the f32 mode's sgemm): each sequence's logits and KV are bit for bit those of a step with it alone, so a
  // sequence decodes to the same tokens whatever is decoded beside it.
  constexpr int kSequences = 12;
  std::vector<ForwardResult> prefills;
  std::vector<ForwardRequest> steps;
  for (int i = 0; i < kSequences; ++i) {
    const int n = 3 + 2 * i;
    prefills.push_back(prefill(random_tokens(n, vocab, 40 + i), iota_positions(n)));
  }
  for (int i = 0; i < kSequences; ++i) {
    ForwardRequest r;
    r.tokens = random_tokens(1, vocab, 70 + i);
    r.positions = {3 + 2 * i};
    r.view = {&prefills[i].kv};
    r.logit_rows = {0};
    r.return_kv = true;
    steps.push_back(std::move(r));
  }
  const std::vector<ForwardResult> together = decoder->forward(steps);
  for (int i = 0; i < kSequences; ++i) {
    const ForwardResult alone = decoder->forward(steps[i]);
    EXPECT_EQ(together[i].logits, alone.logits) << "sequence " << i;
    const HostKv a = segment_to_host(together[i].kv, *backend), b = segment_to_host(alone.kv, *backend);
    EXPECT_EQ(a.k, b.k) << "sequence " << i;
    EXPECT_EQ(a.v, b.v) << "sequence " << i;
  }
}

TEST_P(DecoderForward, RejectsBadRequestsWithAMessage) {
  ForwardRequest r;
  r.tokens = {1, 2};
  r.positions = {0, 0};
  EXPECT_THROW(
      {
        try {
          decoder->forward(r);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("position 0 is given to two"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  r.positions = {0, 1};
  r.tokens = {1, vocab};
  EXPECT_THROW(decoder->forward(r), Error);
  r.tokens = {1, 2};
  r.positions = {0, spec.context};
  EXPECT_THROW(decoder->forward(r), Error);
}

INSTANTIATE_TEST_SUITE_P(ArchsAndModes, DecoderForward,
                         ::testing::Combine(::testing::Values("llama", "qwen2"),
                                            ::testing::Values(ComputeMode::Fast, ComputeMode::F32)),
                         [](const auto& param_info) {
                           return std::get<0>(param_info.param) + "_" + compute_mode_name(std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace kvf
