// kvrun eval's scoring: SQuAD-style answer metrics, fidelity to full attention, bootstrap intervals and the
// corpus written from a data set's passages, each against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "eval/answer_metrics.h"
#include "eval/bootstrap.h"
#include "eval/dataset_corpus.h"
#include "eval/eval_report.h"
#include "eval/fidelity.h"
#include "support/temp_dir.h"

namespace kvf {
namespace {

TEST(AnswerMetrics, NormalizationFollowsSquad) {
  EXPECT_EQ(normalize_answer("The  Eiffel Tower!"), "eiffel tower");
  EXPECT_EQ(normalize_answer("An apple, a day"), "apple day");
  EXPECT_EQ(normalize_answer("  Theatre  "), "theatre");  // only whole-word articles go
  EXPECT_EQ(normalize_answer("U.S.A."), "usa");
}

TEST(AnswerMetrics, ExactMatchF1AndSubstring) {
  EXPECT_EQ(exact_match("the Animorphs.", {"Animorphs"}), 1.0);
  EXPECT_EQ(exact_match("Animorphs series", {"Animorphs"}), 0.0);
  // prediction "chief protocol officer" vs gold "chief of protocol": common {chief, protocol}: P 2/3, R 2/3.
  EXPECT_NEAR(token_f1("Chief protocol officer", {"Chief of Protocol"}), 2.0 / 3, 1e-12);
  // The best gold answer counts.
  EXPECT_NEAR(token_f1("G. Stanley Hall", {"Wundt", "Stanley Hall"}), 2 * (2.0 / 3) * 1 / (2.0 / 3 + 1), 1e-12);
  EXPECT_EQ(token_f1("nothing", {"Animorphs"}), 0.0);
  // Repeated words count once per occurrence in the gold answer.
  EXPECT_NEAR(token_f1("new new york", {"new york"}), 2 * (2.0 / 3) * 1 / (2.0 / 3 + 1), 1e-12);
  EXPECT_EQ(substring_match("The answer to this question is: \"Animorphs\"", {"Animorphs"}), 1.0);
  EXPECT_EQ(substring_match("born in 1995", {"1"}), 0.0);  // whole words only
  EXPECT_EQ(substring_match("anything", {""}), 0.0);
}

TEST(Fidelity, KlDivergenceOfKnownDistributions) {
  EXPECT_EQ(kl_divergence({1, 2, 3}, {1, 2, 3}), 0.0);
  EXPECT_NEAR(kl_divergence({1, 2, 3}, {11, 12, 13}), 0.0, 1e-12);  // softmax ignores a shift
  // P = (0.5, 0.5), Q = softmax(0, log 3) = (0.25, 0.75): KL = 0.5 ln 2 + 0.5 ln(2/3).
  EXPECT_NEAR(kl_divergence({0, 0}, {0, (float)std::log(3.0)}), 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3),
              1e-7);
  EXPECT_THROW(kl_divergence({1, 2}, {1, 2, 3}), Error);
}

TEST(Fidelity, MeanKlDivergenceAveragesRows) {
  // Row 0: P = Q, KL 0; row 1: P = (0.5, 0.5), Q = (0.25, 0.75) as above. The mean is half the second.
  const double second = 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3);
  const std::vector<float> p = {1, 2, 0, 0}, q = {3, 4, 0, (float)std::log(3.0)};
  EXPECT_NEAR(mean_kl_divergence(p, q, 2), second / 2, 1e-7);
  EXPECT_EQ(mean_kl_divergence(p, p, 2), 0.0);  // equal logits give 0 exactly
  EXPECT_NEAR(mean_kl_divergence({0, 0}, {0, (float)std::log(3.0)}, 2), second, 1e-7);  // one row: kl_divergence
  EXPECT_THROW(mean_kl_divergence(p, {1, 2}, 2), Error);
  EXPECT_THROW(mean_kl_divergence({1, 2, 3}, {1, 2, 3}, 2), Error);  // not whole rows
  EXPECT_THROW(mean_kl_divergence({}, {}, 2), Error);
}

TEST(Fidelity, GoldLogLikelihoodAndTopOneAgreement) {
  // Two steps over a vocabulary of 2: log softmax(0, 0)[1] = ln 0.5, log softmax(ln 3, 0)[0] = ln 0.75.
  const std::vector<float> logits = {0, 0, (float)std::log(3.0), 0};
  EXPECT_NEAR(mean_log_likelihood(logits, {1, 0}, 2), (std::log(0.5) + std::log(0.75)) / 2, 1e-7);
  EXPECT_THROW(mean_log_likelihood(logits, {1}, 2), Error);
  EXPECT_EQ(top1_agreement({0, 1, 5, 2}, {0, 3, 1, 0}, 2), 1.0);
  EXPECT_EQ(top1_agreement({0, 1, 5, 2}, {2, 1, 1, 0}, 2), 0.5);
}

TEST(Fidelity, KvDeviationIsMeanSquaredDistancePerLayer) {
  // Two rows (positions 5, 6) of two layers, two values each: [rows, layers, width].
  HostKv a, b;
  a.rows = b.rows = 2;
  a.layers = b.layers = 2;
  a.width = b.width = 2;
  a.positions = b.positions = {5, 6};
  a.k = {0, 0, 1, 1, 0, 0, 1, 1};
  a.v = {0, 0, 0, 0, 0, 0, 0, 0};
  b.k = {3, 4, 1, 1, 0, 0, 1, 1};  // layer 0: row 0 off by (3, 4): 25, row 1 exact: mean 12.5
  b.v = {0, 0, 0, 0, 0, 1, 0, 0};
  const LayerDeviation d = kv_deviation(a, b);
  EXPECT_EQ(d.k, (std::vector<double>{12.5, 0}));
  EXPECT_EQ(d.v, (std::vector<double>{0.5, 0}));
  b.width = 1;
  EXPECT_THROW(kv_deviation(a, b), Error);
}

TEST(Bootstrap, IntervalsAreDeterministicAndBracketTheMean) {
  std::vector<double> values;
  for (int i = 0; i < 50; ++i) values.push_back(i % 5 == 0 ? 1.0 : 0.0);  // mean 0.2
  const Interval a = bootstrap_mean(values), b = bootstrap_mean(values);
  EXPECT_DOUBLE_EQ(a.value, 0.2);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_LT(a.low, 0.2);
  EXPECT_GT(a.high, 0.2);
  // The binomial standard error is 0.057: a 95% interval is about +-0.11 wide, not +-0.01 or +-0.3.
  EXPECT_GT(a.high - a.low, 0.15);
  EXPECT_LT(a.high - a.low, 0.35);
  const Interval flat = bootstrap_mean(std::vector<double>(10, 3.0));
  EXPECT_EQ(flat.low, 3.0);
  EXPECT_EQ(flat.high, 3.0);
  // A statistic that is undefined on every resample leaves the interval undefined, not made up.
  const Interval none = bootstrap(4, [](const std::vector<size_t>&) { return NAN; });
  EXPECT_TRUE(std::isnan(none.low));
}

TEST(Bootstrap, PairedDeltaIsTheMeanDifferenceWithItsInterval) {
  // A constant difference of -0.25 per question, whatever the values: the interval is that point.
  const std::vector<double> reference = {0.5, 1.0, 0.0, 0.75}, values = {0.25, 0.75, -0.25, 0.5};
  const Interval constant = bootstrap_paired_delta(values, reference);
  EXPECT_DOUBLE_EQ(constant.value, -0.25);
  EXPECT_DOUBLE_EQ(constant.low, -0.25);
  EXPECT_DOUBLE_EQ(constant.high, -0.25);
  // One question of 40 lost 1 (F1 from 1 to 0), the others unchanged: the mean delta is -1/40, and the interval
  // runs from -3/40 or so up to 0 (a resample without that question), never above.
  std::vector<double> ref(40, 1.0), got(40, 1.0);
  got[7] = 0.0;
  const Interval one = bootstrap_paired_delta(got, ref);
  EXPECT_DOUBLE_EQ(one.value, -1.0 / 40);
  EXPECT_EQ(one.high, 0.0);
  EXPECT_LT(one.low, -1.0 / 40);
  EXPECT_GE(one.low, -4.0 / 40);
  // A run against itself: 0 exactly.
  EXPECT_EQ(bootstrap_paired_delta(reference, reference).high, 0.0);
  EXPECT_THROW(bootstrap_paired_delta({1, 2}, {1}), Error);
}

TEST(ReferenceFidelity, PairsEachQuestionWithTheReferenceRun) {
  // Four questions; the third was not compared (a run from before --reference-kv): n is 3 and it is left out of
  // every mean, the reference's runs included.
  std::vector<EvalRun> runs(4), ref(4);
  const double identical[] = {1, 0, NAN, 1}, kl[] = {0, 0.3, NAN, 0}, ll[] = {-1, -2, -9, -1}, f1[] = {1, 0, 0, 0.5};
  const double ref_ll[] = {-1, -1.5, 0, -1}, ref_f1[] = {1, 1, 1, 0.5};
  std::vector<const EvalRun*> r, s;
  for (size_t i = 0; i < 4; ++i) {
    runs[i].ref_identical = identical[i], runs[i].ref_kl = kl[i], runs[i].gold_ll = ll[i], runs[i].f1 = f1[i];
    ref[i].gold_ll = ref_ll[i], ref[i].f1 = ref_f1[i];
    r.push_back(&runs[i]), s.push_back(&ref[i]);
  }
  const ReferenceFidelity f = reference_fidelity(r, s);
  EXPECT_EQ(f.n, 3u);
  EXPECT_DOUBLE_EQ(f.identical.value, 2.0 / 3);
  EXPECT_DOUBLE_EQ(f.kl.value, 0.1);
  EXPECT_DOUBLE_EQ(f.gold_ll_delta.value, -0.5 / 3);  // 0, -0.5, 0
  EXPECT_DOUBLE_EQ(f.f1_delta.value, -1.0 / 3);       // 0, -1, 0
  EXPECT_LE(f.f1_delta.low, f.f1_delta.value);
  EXPECT_EQ(f.f1_delta.high, 0.0);
  EXPECT_EQ(f.kl.low, 0.0);
  // Nothing compared: n 0 and no numbers.
  const ReferenceFidelity none = reference_fidelity({s[0]}, {s[0]});
  EXPECT_EQ(none.n, 0u);
  EXPECT_TRUE(std::isnan(none.kl.value));
  EXPECT_THROW(reference_fidelity(r, {s[0]}), Error);
}

TEST(DatasetCorpus, DistinctPassagesInFirstSeenOrder) {
  const auto dir = test::fresh_test_dir();
  std::vector<QueryRecord> records(2);
  records[0].query.contexts = {{"A", "alpha \"quoted\""}, {"B", "beta"}};
  records[1].query.contexts = {{"B", "beta"}, {"A", "other text"}};
  const std::string path = (dir / "corpus.jsonl").string();
  EXPECT_EQ(write_dataset_corpus(records, path), 3u);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "{\"id\": 1, \"title\": \"A\", \"text\": \"alpha \\\"quoted\\\"\"}\n"
            "{\"id\": 2, \"title\": \"B\", \"text\": \"beta\"}\n"
            "{\"id\": 3, \"title\": \"A\", \"text\": \"other text\"}\n");
  // An unchanged corpus is not rewritten (a store built from it sees the same file).
  const auto written = std::filesystem::last_write_time(path);
  std::filesystem::last_write_time(path, written - std::chrono::hours(1));
  write_dataset_corpus(records, path);
  EXPECT_EQ(std::filesystem::last_write_time(path), written - std::chrono::hours(1));
  EXPECT_THROW(write_dataset_corpus({QueryRecord{}}, (dir / "empty.jsonl").string()), Error);
}

}  // namespace
}  // namespace kvf
