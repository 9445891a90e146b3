// The sweep's results as a researcher reads them (OUT/results.jsonl in, these out):
//   metrics.csv       per method, KV mode and ratio: EM, F1, substring accuracy, normalized F1, gold log-
//                     likelihood and its normalized recovery, first-token KL, top-1 agreement (each with a 95%
//                     bootstrap interval over questions) and median TTFT by phase
//   kv_deviation.csv  per point and layer: mean KV deviation from full attention (FusionRAG eq. 7)
//   report.md         the tables, the plots and how they were made; with --reference-kv MODE, "Fidelity against
//                     MODE" (reference_fidelity per point, also as metrics.csv's ref_* columns)
//   *.png             normalized F1 and log-likelihood recovery against ratio (FusionRAG Fig. 13), TTFT by
//                     phase (Fig. 14a), KV deviation by layer (Fig. 4); drawn by gnuplot
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "eval/bootstrap.h"
#include "eval/eval_sweep.h"

namespace kvf {

struct ReportContext {
  std::string title;    // e.g. the data set's file name
  std::string command;  // the command line that made the results
  std::string machine;  // CPU, cores, threads
};

// One point against the same method and ratio over the reference KV mode (--reference-kv), paired per question over
// the questions whose run was compared (ref_identical and ref_kl finite): n of them, the share with the reference's
// answer tokens exactly, the mean answer KL, and the mean of this minus the reference of gold LL and of F1, each with
// its 95% bootstrap interval over those questions (NAN when n is 0). runs[i] and reference[i] are one question's.
struct ReferenceFidelity {
  size_t n = 0;
  Interval identical{NAN, NAN, NAN}, kl{NAN, NAN, NAN}, gold_ll_delta{NAN, NAN, NAN}, f1_delta{NAN, NAN, NAN};
};
ReferenceFidelity reference_fidelity(const std::vector<const EvalRun*>& runs,
                                     const std::vector<const EvalRun*>& reference);

// Returns false when gnuplot is missing (the tables are still written; the report says the plots are absent).
bool write_eval_report(const std::string& out_dir, const ReportContext& context);

// "Intel(R) Xeon(R) ..., 2 cores, 2 threads" from /proc/cpuinfo.
std::string describe_machine(int threads);

}  // namespace kvf
