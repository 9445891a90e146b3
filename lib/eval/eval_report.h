// The sweep's results as a researcher reads them (OUT/results.jsonl in, these out):
//   metrics.csv       per method, KV mode and ratio: EM, F1, substring accuracy, normalized F1, gold log-
//                     likelihood and its normalized recovery, first-token KL, top-1 agreement (each with a 95%
//                     bootstrap interval over questions) and median TTFT by phase
//   kv_deviation.csv  per point and layer: mean KV deviation from full attention (FusionRAG eq. 7)
//   report.md         the tables, the plots and how they were made
//   *.png             normalized F1 and log-likelihood recovery against ratio (FusionRAG Fig. 13), TTFT by
//                     phase (Fig. 14a), KV deviation by layer (Fig. 4); drawn by gnuplot
#pragma once
#include <string>

namespace kvf {

struct ReportContext {
  std::string title;    // e.g. the data set's file name
  std::string command;  // the command line that made the results
  std::string machine;  // CPU, cores, threads
};

// Returns false when gnuplot is missing (the tables are still written; the report says the plots are absent).
bool write_eval_report(const std::string& out_dir, const ReportContext& context);

// "Intel(R) Xeon(R) ..., 2 cores, 2 threads" from /proc/cpuinfo.
std::string describe_machine(int threads);

}  // namespace kvf
