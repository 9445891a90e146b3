#include "eval/eval_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/child_process.h"
#include "core/cpu_info.h"
#include "core/cpu_usage.h"
#include "core/error.h"
#include "eval/bootstrap.h"
#include "eval/eval_sweep.h"
#include "eval/gnuplot_text.h"
#include "io/file_roles.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// One point of the sweep with its per-question runs (questions in file order).
struct PointRuns {
  FusionMethod method;
  std::string kv;
  double ratio;
  std::vector<const EvalRun*> runs;
  std::string label() const {
    if (method == FusionMethod::Full || method == FusionMethod::Reuse) return method_name(method);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %.2f", method_name(method).c_str(), ratio);
    return buf;
  }
};

struct Aggregate {
  Interval em, f1, substring, norm_f1, rel_f1, gold_ll, norm_ll, kl_first, top1;
  double gold_share = NAN;  // mean over the questions that know it: recomputed tokens in gold passages
  double recomputed = 0, ttft = 0, retrieve = 0, load = 0, select = 0, prefill = 0, decode = 0, speedup = 0;
  std::vector<double> dev_k, dev_v;  // mean over questions, per layer
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The mean of the finite values (NAN when there are none).
double finite_mean(const std::vector<double>& v) {
  double sum = 0;
  size_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) sum += x, ++n;
  return n ? sum / (double)n : NAN;
}

double mean_at(const std::vector<double>& v, const std::vector<size_t>& idx) {
  double s = 0;
  for (size_t i : idx) s += v[i];
  return s / (double)idx.size();
}

std::vector<double> field(const PointRuns& p, double EvalRun::*member) {
  std::vector<double> out;
  for (const EvalRun* r : p.runs) out.push_back(r->*member);
  return out;
}

// (m - low) / (high - low) of means over the same resampled questions (FusionRAG eq. 11).
Interval normalized(const std::vector<double>& m, const std::vector<double>& low, const std::vector<double>& high) {
  return bootstrap(m.size(), [&](const std::vector<size_t>& idx) {
    const double lo = mean_at(low, idx), hi = mean_at(high, idx);
    return hi == lo ? NAN : (mean_at(m, idx) - lo) / (hi - lo);
  });
}

// mean(m) / mean(reference) over the same resampled questions: F1 relative to full attention (ProphetKV's
// measure), which unlike the normalized score does not divide by a full-minus-reuse gap that may be near 0.
Interval relative(const std::vector<double>& m, const std::vector<double>& reference) {
  return bootstrap(m.size(), [&](const std::vector<size_t>& idx) {
    const double ref = mean_at(reference, idx);
    return ref == 0 ? NAN : mean_at(m, idx) / ref;
  });
}

std::vector<PointRuns> group(const std::vector<EvalQuestion>& questions) {
  std::vector<PointRuns> points;
  for (const EvalRun& r : questions.at(0).runs) points.push_back({r.method, r.kv, r.ratio, {}});
  for (const EvalQuestion& q : questions) {
    KVF_CHECK(q.runs.size() == points.size(), "question '", q.id, "' has ", q.runs.size(), " runs, the first ",
              points.size(), ": results of different sweeps are mixed");
    for (size_t i = 0; i < points.size(); ++i) points[i].runs.push_back(&q.runs[i]);
  }
  return points;
}

Aggregate aggregate(const PointRuns& p, const PointRuns& full, const PointRuns& reuse) {
  Aggregate a;
  a.em = bootstrap_mean(field(p, &EvalRun::em));
  a.f1 = bootstrap_mean(field(p, &EvalRun::f1));
  a.substring = bootstrap_mean(field(p, &EvalRun::substring));
  a.gold_ll = bootstrap_mean(field(p, &EvalRun::gold_ll));
  a.kl_first = bootstrap_mean(field(p, &EvalRun::kl_first));
  a.top1 = bootstrap_mean(field(p, &EvalRun::top1));
  a.norm_f1 = normalized(field(p, &EvalRun::f1), field(reuse, &EvalRun::f1), field(full, &EvalRun::f1));
  a.rel_f1 = relative(field(p, &EvalRun::f1), field(full, &EvalRun::f1));
  a.gold_share = finite_mean(field(p, &EvalRun::gold_share));
  a.norm_ll = normalized(field(p, &EvalRun::gold_ll), field(reuse, &EvalRun::gold_ll), field(full, &EvalRun::gold_ll));
  std::vector<double> rec, ttft, retrieve, load, select, prefill, decode, full_ttft;
  for (size_t i = 0; i < p.runs.size(); ++i) {
    const EvalRun& r = *p.runs[i];
    rec.push_back((double)r.n_recomputed);
    ttft.push_back(r.ms.ttft), retrieve.push_back(r.ms.retrieve), load.push_back(r.ms.load);
    select.push_back(r.ms.select), prefill.push_back(r.ms.prefill), decode.push_back(r.ms.decode);
    full_ttft.push_back(full.runs[i]->ms.ttft);
    const LayerDeviation& d = r.deviation;
    a.dev_k.resize(d.k.size()), a.dev_v.resize(d.v.size());
    for (size_t l = 0; l < d.k.size(); ++l) a.dev_k[l] += d.k[l] / (double)p.runs.size();
    for (size_t l = 0; l < d.v.size(); ++l) a.dev_v[l] += d.v[l] / (double)p.runs.size();
  }
  a.recomputed = median(rec), a.ttft = median(ttft), a.retrieve = median(retrieve), a.load = median(load);
  a.select = median(select), a.prefill = median(prefill), a.decode = median(decode);
  a.speedup = median(full_ttft) / a.ttft;
  return a;
}

std::string fmt(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string with_interval(const Interval& i, int digits = 3) {
  return fmt(i.value, digits) + " [" + fmt(i.low, digits) + ", " + fmt(i.high, digits) + "]";
}

void write_file(const fs::path& path, const std::string& text) { write_output_file(path.string(), text); }

// Per point, against the reference KV mode (--reference-kv); empty when the sweep has none.
using FidelityColumns = std::vector<ReferenceFidelity>;

std::string metrics_csv(const std::vector<PointRuns>& points, const std::vector<Aggregate>& aggs,
                        const FidelityColumns& fidelity) {
  std::ostringstream o;
  o << "method,kv,ratio,n";
  for (const char* m : {"em", "f1", "substring", "norm_f1", "rel_f1", "gold_ll", "norm_ll", "kl_first", "top1"})
    o << "," << m << "," << m << "_low," << m << "_high";
  o << ",gold_share,recomputed,ttft_ms,retrieve_ms,load_ms,select_ms,prefill_ms,decode_ms,speedup_vs_full";
  if (!fidelity.empty()) {
    o << ",ref_n";
    for (const char* m : {"ref_identical", "ref_kl", "ref_gold_ll_delta", "ref_f1_delta"})
      o << "," << m << "," << m << "_low," << m << "_high";
  }
  o << "\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const PointRuns& p = points[i];
    const Aggregate& a = aggs[i];
    o << method_name(p.method) << "," << p.kv << "," << p.ratio << "," << p.runs.size();
    for (const Interval* v :
         {&a.em, &a.f1, &a.substring, &a.norm_f1, &a.rel_f1, &a.gold_ll, &a.norm_ll, &a.kl_first, &a.top1})
      o << "," << fmt(v->value, 6) << "," << fmt(v->low, 6) << "," << fmt(v->high, 6);
    o << "," << fmt(a.gold_share, 6) << "," << a.recomputed << "," << fmt(a.ttft, 2) << "," << fmt(a.retrieve, 2)
      << "," << fmt(a.load, 2) << "," << fmt(a.select, 2) << "," << fmt(a.prefill, 2) << "," << fmt(a.decode, 2) << "," << fmt(a.speedup, 3);
    if (!fidelity.empty()) {
      const ReferenceFidelity& f = fidelity[i];
      o << "," << f.n;
      for (const Interval* v : {&f.identical, &f.kl, &f.gold_ll_delta, &f.f1_delta})
        o << "," << fmt(v->value, 9) << "," << fmt(v->low, 9) << "," << fmt(v->high, 9);
    }
    o << "\n";
  }
  return o.str();
}

std::string deviation_csv(const std::vector<PointRuns>& points, const std::vector<Aggregate>& aggs) {
  std::ostringstream o;
  o << "method,kv,ratio,layer,k_deviation,v_deviation\n";
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t l = 0; l < aggs[i].dev_k.size(); ++l)
      o << method_name(points[i].method) << "," << points[i].kv << "," << points[i].ratio << "," << l << ","
        << aggs[i].dev_k[l] << "," << aggs[i].dev_v[l] << "\n";
  return o.str();
}

// gnuplot data blocks and scripts; each figure is one .gp file kept next to its PNG so it can be re-drawn.

std::string curve_block(const std::vector<PointRuns>& points, const std::vector<Aggregate>& aggs,
                        const std::string& kv, FusionMethod method, Interval Aggregate::*metric) {
  std::ostringstream o;
  for (size_t i = 0; i < points.size(); ++i) {
    const PointRuns& p = points[i];
    if (p.kv != kv || (p.method != method && p.method != FusionMethod::Reuse)) continue;
    const Interval& v = aggs[i].*metric;
    o << p.ratio << " " << v.value << " " << v.low << " " << v.high << "\n";
  }
  return o.str();
}

std::string quality_figure(const std::vector<PointRuns>& points, const std::vector<Aggregate>& aggs,
                           Interval Aggregate::*metric, const std::string& png, const std::string& ylabel,
                           const std::string& title) {
  std::set<std::string> kvs;
  for (const PointRuns& p : points)
    if (p.kv != "-") kvs.insert(p.kv);
  std::ostringstream o, plot;
  int block = 0;
  const std::map<FusionMethod, int> color = {{FusionMethod::CacheBlend, 1}, {FusionMethod::A3, 2}, {FusionMethod::Fusion, 3}};
  for (const std::string& kv : kvs)
    for (const auto& [method, c] : color) {
      const std::string data = curve_block(points, aggs, kv, method, metric);
      if (std::count(data.begin(), data.end(), '\n') < 2) continue;
      bool defined = false;  // gnuplot refuses a curve with no finite point
      for (size_t i = 0; i < points.size(); ++i)
        defined = defined || (points[i].kv == kv && std::isfinite((aggs[i].*metric).value));
      if (!defined) continue;
      o << "$d" << block << " << EOD\n" << data << "EOD\n";
      plot << (block ? ", \\\n  " : "plot ") << "$d" << block << " using 1:2:3:4 with yerrorlines lc " << c
           << " dt " << (kv == "similarity" ? 1 : 2) << " pt " << (kv == "similarity" ? 7 : 6) << " title "
           << gnuplot_quoted(method_name(method) + " (" + kv + ")");
      ++block;
    }
  o << "set terminal pngcairo size 900,560 font ',11'\nset output " << gnuplot_quoted(png) << "\n"
    << "set title " << gnuplot_quoted(title) << " noenhanced\nset xlabel 'recompute ratio'\nset ylabel "
    << gnuplot_quoted(ylabel) << "\n"
    << "set key outside right\nset grid\nset xrange [-0.01:*]\n"
    << "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb 'gray'\n"
    << "set label 'full attention' at graph 0.02, first 1 offset 0,0.6 tc rgb 'gray'\n";
  if (block == 0)  // nothing defined (full and reuse scored alike): an empty frame that says so
    return o.str() + "set xrange [0:1]\nset yrange [0:1.2]\nset label 'not defined: full and reuse score the same' "
                     "at graph 0.5, 0.5 center\nplot NaN notitle\n";
  return o.str() + plot.str() + "\n";
}

std::string ttft_figure(const std::vector<PointRuns>& points, const std::vector<Aggregate>& aggs,
                        const std::string& kv, const std::string& title) {
  std::ostringstream o;
  o << "$t << EOD\n";
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].kv == "-" || points[i].kv == kv)
      o << "\"" << points[i].label() << "\" " << aggs[i].retrieve + aggs[i].load << " " << aggs[i].select << " "
        << aggs[i].prefill << "\n";
  o << "EOD\n"
    << "set terminal pngcairo size 1000,520 font ',11'\nset output 'ttft.png'\n"
    << "set title " << gnuplot_quoted(title) << " noenhanced\nset ylabel 'median time to first token, ms'\n"
    << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
    << "set boxwidth 0.7\nset xtics rotate by -40\nset key top right\nset grid ytics\n"
    << "plot $t using 2:xtic(1) title 'load KV', '' using 3 title 'select', '' using 4 title 'prefill'\n";
  return o.str();
}

std::string deviation_figure(const std::vector<PointRuns>& points, const std::vector<Aggregate>& aggs,
                             const std::string& title) {
  std::ostringstream o, plot;
  int block = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const PointRuns& p = points[i];
    const bool wanted = p.method == FusionMethod::Reuse || std::abs(p.ratio - 0.15) < 1e-9;
    if (p.kv == "-" || !wanted) continue;
    o << "$v" << block << " << EOD\n";
    for (size_t l = 0; l < aggs[i].dev_k.size(); ++l) o << l << " " << aggs[i].dev_k[l] + aggs[i].dev_v[l] << "\n";
    o << "EOD\n";
    plot << (block ? ", \\\n  " : "plot ") << "$v" << block << " using 1:2 with linespoints dt "
         << (p.kv == "similarity" ? 1 : 2) << " title " << gnuplot_quoted(p.label() + " (" + p.kv + ")");
    ++block;
  }
  o << "set terminal pngcairo size 900,560 font ',11'\nset output 'kv_deviation.png'\n"
    << "set title " << gnuplot_quoted(title) << " noenhanced\nset xlabel 'layer'\n"
    << "set ylabel 'mean KV deviation from full (eq. 7)'\n"
    << "set logscale y\nset format y '10^{%L}'\nset key outside right\nset grid\n";
  return o.str() + plot.str() + "\n";
}

// "norm_f1.gp" -> "norm_f1.png".
std::string png_of(const std::string& script) { return fs::path(script).replace_extension(".png").string(); }

// gnuplot runs from an argument vector in `dir` (never through a shell), each script naming its PNG by a path
// relative to it.
bool draw(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& scripts) {
  if (!program_on_path("gnuplot")) return false;
  for (const auto& [name, script] : scripts) {
    write_file(dir / name, script);
    output_target((dir / png_of(name)).string(), {}, "eval --out");  // gnuplot writes it: a regular file or none
    KVF_CHECK(run_program({"gnuplot", name}, dir.string()) == 0, (dir / name).string(), ": gnuplot failed");
  }
  return true;
}

}  // namespace

namespace {

// A setting of sweep.json as text for the report, whatever its JSON type (the file may come from elsewhere).
std::string sweep_text(const nlohmann::json& sweep, const char* key, const std::string& absent) {
  if (!sweep.contains(key)) return absent;
  return sweep[key].is_string() ? sweep[key].get<std::string>() : sweep[key].dump();
}
bool sweep_flag(const nlohmann::json& sweep, const char* key) { return sweep.contains(key) && sweep[key] == true; }

// The report's Provenance line: the data set's sha256, the model's fingerprint and the commits of the runs that
// answered the questions (sweep.json's "provenance"); "" for a sweep from before it was recorded.
std::string provenance_line(const nlohmann::json& sweep) {
  if (!sweep.contains("provenance") || !sweep["provenance"].is_object()) return "";
  const nlohmann::json& p = sweep["provenance"];
  std::string commits;
  if (p.contains("runs") && p["runs"].is_array())
    for (const nlohmann::json& run : p["runs"]) {
      const std::string commit = sweep_text(run, "commit", "?");
      if (commits.find("`" + commit + "`") == std::string::npos)
        commits += (commits.empty() ? "`" : ", `") + commit + "`";
    }
  return "- Provenance: data set sha256 `" + sweep_text(p, "dataset_sha256", "?") + "`, model fingerprint `" +
         sweep_text(p, "model_fingerprint", "?") + "`, kvfuse commit " + (commits.empty() ? "?" : commits) +
         " (`sweep.json`)\n";
}

// Whether the timings are the methods' own: other processes' share of the CPUs while each question ran.
std::string cores_note(const std::vector<EvalQuestion>& questions) {
  std::vector<double> others;
  for (const EvalQuestion& q : questions)
    if (std::isfinite(q.others_cpu)) others.push_back(q.others_cpu);
  if (others.empty()) return "Whether other work shared the CPUs was not recorded for these questions.\n\n";
  const size_t busy =
      (size_t)std::count_if(others.begin(), others.end(), [](double x) { return x > kOthersCpuNoticed; });
  std::ostringstream o;
  o << "Other processes used " << fmt(100 * median(others), 1) << "% of the CPUs while a question was answered "
    << "(median; at most " << fmt(100 * *std::max_element(others.begin(), others.end()), 1) << "%; over "
    << fmt(100 * kOthersCpuNoticed, 0) << "% for "
    << busy << " of " << others.size() << " questions)";
  if (10 * busy >= others.size())
    o << ":\nthese timings were taken beside other work and are not the methods' own; measure TTFT on quiet cores\n"
      << "(`bench/ttft_bench.sh`).\n\n";
  else
    o << ":\nthe cores were quiet.\n\n";
  return o.str();
}

// The machines the questions were answered on, with counts when more than one; `fallback` (the machine writing the
// report) when the results do not say.
std::string machines_answered_on(const std::vector<EvalQuestion>& questions, const std::string& fallback) {
  std::map<std::string, size_t> count;
  for (const EvalQuestion& q : questions) ++count[q.machine.empty() ? "not recorded" : q.machine];
  if (count.size() == 1) return count.begin()->first == "not recorded" ? fallback : count.begin()->first;
  std::string out;
  for (const auto& [machine, n] : count)
    out += (out.empty() ? "" : "; ") + machine + " (" + std::to_string(n) + " questions)";
  return out;
}

}  // namespace

ReferenceFidelity reference_fidelity(const std::vector<const EvalRun*>& runs,
                                     const std::vector<const EvalRun*>& reference) {
  KVF_CHECK(runs.size() == reference.size(), "reference_fidelity: ", runs.size(), " runs against ", reference.size(),
            " reference runs");
  std::vector<double> identical, kl, gold_ll, ref_gold_ll, f1, ref_f1;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!std::isfinite(runs[i]->ref_identical) || !std::isfinite(runs[i]->ref_kl)) continue;
    identical.push_back(runs[i]->ref_identical), kl.push_back(runs[i]->ref_kl);
    gold_ll.push_back(runs[i]->gold_ll), ref_gold_ll.push_back(reference[i]->gold_ll);
    f1.push_back(runs[i]->f1), ref_f1.push_back(reference[i]->f1);
  }
  ReferenceFidelity f;
  f.n = identical.size();
  if (f.n == 0) return f;
  f.identical = bootstrap_mean(identical);
  f.kl = bootstrap_mean(kl);
  f.gold_ll_delta = bootstrap_paired_delta(gold_ll, ref_gold_ll);
  f.f1_delta = bootstrap_paired_delta(f1, ref_f1);
  return f;
}

std::string describe_machine(int threads) {
  const CpuInfo cpu = read_cpu_info();
  return cpu.model + ", " + std::to_string(cpu.processors) + " cores, " + std::to_string(threads) + " threads";
}

namespace {

// The sweep's points, each with its aggregate, and the two that the normalized scores run between: full attention
// (1) and reuse (0), Full Reuse where the sweep ran it, else the reuse it ran.
struct SweepSummary {
  std::vector<PointRuns> points;
  std::vector<Aggregate> aggregates;  // per point
  const PointRuns* full = nullptr;
  const PointRuns* reuse = nullptr;
  bool full_reuse() const { return reuse->kv == "independent"; }
};

// The first point of `method` over `kv` KV ("": any), or null.
const PointRuns* find_point(const std::vector<PointRuns>& points, FusionMethod method, const std::string& kv) {
  for (const PointRuns& point : points)
    if (point.method == method && (kv.empty() || point.kv == kv)) return &point;
  return nullptr;
}

SweepSummary summarize(const std::vector<EvalQuestion>& questions, const std::string& out_dir) {
  SweepSummary summary;
  summary.points = group(questions);
  summary.full = find_point(summary.points, FusionMethod::Full, "");
  summary.reuse = find_point(summary.points, FusionMethod::Reuse, "independent");
  if (!summary.reuse) summary.reuse = find_point(summary.points, FusionMethod::Reuse, "");
  KVF_CHECK(summary.full && summary.reuse, out_dir, ": results lack full or reuse runs");
  for (const PointRuns& point : summary.points)
    summary.aggregates.push_back(aggregate(point, *summary.full, *summary.reuse));
  return summary;
}

// The figures, drawn by gnuplot when it is there (false: not drawn).
bool draw_figures(const fs::path& dir, const SweepSummary& summary, const std::string& title) {
  const std::vector<PointRuns>& points = summary.points;
  const std::vector<Aggregate>& aggs = summary.aggregates;
  const std::string ttft_kv = find_point(points, FusionMethod::Reuse, "similarity") ? "similarity" : summary.reuse->kv;
  return draw(dir, {{"norm_f1.gp", quality_figure(points, aggs, &Aggregate::norm_f1, "norm_f1.png", "normalized F1",
                                                  title + ": normalized F1 (95% CI)")},
                    {"norm_ll.gp",
                     quality_figure(points, aggs, &Aggregate::norm_ll, "norm_ll.png", "normalized gold log-likelihood",
                                    title + ": gold-answer log-likelihood recovery (95% CI)")},
                    {"ttft.gp", ttft_figure(points, aggs, ttft_kv, title + ": TTFT by phase (" + ttft_kv + " KV)")},
                    {"kv_deviation.gp", deviation_figure(points, aggs, title + ": KV deviation by layer")}});
}

// The report's title and its list: questions, store, command, machine, provenance.
std::string report_header(const std::vector<EvalQuestion>& questions, const nlohmann::json& sweep,
                          const ReportContext& context) {
  double context_tokens = 0, question_tokens = 0, chunks = 0;
  for (const EvalQuestion& question : questions)
    context_tokens += question.n_context_tokens, question_tokens += question.n_question_tokens,
        chunks += question.n_chunks;
  const double n_questions = (double)questions.size();
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::ostringstream header;
  header << "# kvrun eval: " << context.title << "\n\n"
         << "- Questions: " << questions.size() << " (setting " << sweep_text(sweep, "setting", "?")
         << (sweep_flag(sweep, "best_last") ? ", best chunk last" : "")
         << (sweep_flag(sweep, "exact_first_chunk") ? ", first chunk's independent KV in every mode" : "") << "), mean "
         << fmt(chunks / n_questions, 1) << " chunks, " << fmt(context_tokens / n_questions, 0)
         << " context tokens and " << fmt(question_tokens / n_questions, 0) << " question tokens per question\n"
         << "- Store: `" << sweep_text(sweep, "store", "?") << "`, model " << sweep_text(sweep, "model", "?")
         << "; answers are greedy, at most " << sweep_text(sweep, "max_tokens", "?")
         << " tokens, cut at the first blank line\n"
         << "- Command: `" << context.command << "`\n"
         << "- Machine: " << machines_answered_on(questions, context.machine) << "; report written " << date << "\n"
         << provenance_line(sweep) << "\n";
  return header.str();
}

// How the measures are made.
std::string measures_note(const SweepSummary& summary) {
  // The 0 of the normalized scores: Full Reuse, or the reuse the sweep ran when it ran no independent KV.
  const std::string zero = summary.full_reuse()
                               ? "reuse of the\nindependent KV (Full Reuse)"
                               : "reuse of the\n" + summary.reuse->kv + " KV (this sweep ran no Full Reuse)";
  std::ostringstream note;
  note << "Intervals are 95% percentile bootstrap intervals over questions (1000 resamples). Normalized scores are\n"
       << "(x - reuse) / (full - reuse) of the means over the same questions (FusionRAG eq. 11), with " << zero
       << " as 0 and full attention as 1: a similarity-mode point above 0 at ratio 0 is what\n"
       << "the offline stage alone buys. Every selector at ratio 0 is reuse itself, so its curve starts at reuse.\n"
       << "F1 / full is the ratio of mean F1 to full attention's (ProphetKV's measure); it needs no gap to divide by.\n"
       << "Gold LL is the mean log-probability of the first gold answer's tokens under teacher forcing; KL is\n"
       << "KL(full || method) of the first answer token; top-1 is the share of gold-answer steps whose most likely\n"
       << "token equals full attention's. TTFT counts loading chunk KV from the store only where it was not already\n"
       << "in the in-memory chunk cache: the sweep loads the next question's chunks in the background while one\n"
       << "computes (FusionRAG §4.2), so load is mostly 0 here; `docs/results/ttft_cpu.md` measures it.\n\n";
  return note.str();
}

std::string quality_table(const SweepSummary& summary) {
  std::ostringstream table;
  table << "## Quality\n\n"
        << "| method | kv | ratio | F1 | EM | substring | normalized F1 | F1 / full | gold LL | normalized LL | "
           "KL first | top-1 |\n"
        << "|---|---|---:|---|---:|---:|---|---|---:|---|---:|---:|\n";
  for (size_t i = 0; i < summary.points.size(); ++i) {
    const PointRuns& point = summary.points[i];
    const Aggregate& stats = summary.aggregates[i];
    table << "| " << method_name(point.method) << " | " << point.kv << " | " << fmt(point.ratio, 2) << " | "
          << with_interval(stats.f1) << " | " << fmt(stats.em.value) << " | " << fmt(stats.substring.value) << " | "
          << with_interval(stats.norm_f1, 2) << " | " << with_interval(stats.rel_f1, 2) << " | "
          << fmt(stats.gold_ll.value) << " | " << with_interval(stats.norm_ll, 2) << " | "
          << fmt(stats.kl_first.value, 4) << " | " << fmt(stats.top1.value) << " |\n";
  }
  return table.str();
}

// Normalized scores divide by full - reuse: how sure that gap is, before anyone reads the ratios.
std::string reuse_gaps(const SweepSummary& summary) {
  const std::string gap_name = summary.full_reuse() ? "full reuse" : "reuse of the " + summary.reuse->kv + " KV";
  std::ostringstream gaps;
  for (const auto& [name, member] : {std::pair{"F1", &EvalRun::f1}, std::pair{"gold LL", &EvalRun::gold_ll}}) {
    std::vector<double> gap;
    for (size_t i = 0; i < summary.full->runs.size(); ++i)
      gap.push_back(summary.full->runs[i]->*member - summary.reuse->runs[i]->*member);
    const Interval interval = bootstrap_mean(gap);
    gaps << "\nFull attention minus " << gap_name << ", " << name << ": " << with_interval(interval)
         << (interval.low <= 0 && interval.high >= 0
                 ? " (the interval includes 0: the normalized " + std::string(name) +
                       " values above are not meaningful on this data)"
                 : "")
         << ".\n";
  }
  return gaps.str();
}

std::string ttft_table(const std::vector<EvalQuestion>& questions, const SweepSummary& summary) {
  std::vector<double> gold_context;
  for (const EvalQuestion& question : questions) gold_context.push_back(question.gold_context_share);
  const double gold_base = finite_mean(gold_context);
  std::ostringstream table;
  table << "\n## Time to first token (medians over questions, ms)\n\n" << cores_note(questions);
  if (std::isfinite(gold_base))  // the data set names each question's supporting passages
    table << "In gold: the share of a point's recomputed tokens that lie in the question's supporting (gold) "
             "passages,\nmean over questions; those passages hold "
          << fmt(100 * gold_base, 1) << "% of the context tokens, the share a random choice would get.\n\n";
  table << "| method | kv | ratio | recomputed tokens | in gold | TTFT | load | select | prefill | speedup vs full |\n"
        << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < summary.points.size(); ++i) {
    const PointRuns& point = summary.points[i];
    const Aggregate& stats = summary.aggregates[i];
    table << "| " << method_name(point.method) << " | " << point.kv << " | " << fmt(point.ratio, 2) << " | "
          << fmt(stats.recomputed, 0) << " | "
          << (std::isfinite(stats.gold_share) ? fmt(100 * stats.gold_share, 1) + "%" : "-") << " | "
          << fmt(stats.ttft, 1) << " | " << fmt(stats.load, 1) << " | " << fmt(stats.select, 1) << " | "
          << fmt(stats.prefill, 1) << " | " << fmt(stats.speedup, 2) << "x |\n";
  }
  return table.str();
}

// Small numbers (answer KL near 0) keep their digits.
std::string fmt_small(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
std::string small_with_interval(const Interval& i) {
  return fmt_small(i.value) + " [" + fmt_small(i.low) + ", " + fmt_small(i.high) + "]";
}
std::string signed_with_interval(const Interval& i) {
  const auto sign = [](double v) { return (v >= 0 ? "+" : "") + fmt(v); };
  return sign(i.value) + " [" + sign(i.low) + ", " + sign(i.high) + "]";
}

// Per point: its fidelity against the same method and ratio over `reference` (n 0 for full attention, the
// reference's own points and points the reference has no match for).
FidelityColumns fidelity_columns(const SweepSummary& summary, const std::string& reference) {
  FidelityColumns out(summary.points.size());
  for (size_t i = 0; i < summary.points.size(); ++i) {
    const PointRuns& p = summary.points[i];
    if (p.kv == "-" || p.kv == reference) continue;
    for (const PointRuns& r : summary.points)
      if (r.kv == reference && r.method == p.method && r.ratio == p.ratio) out[i] = reference_fidelity(p.runs, r.runs);
  }
  return out;
}

std::string fidelity_table(const SweepSummary& summary, const FidelityColumns& fidelity, const std::string& reference) {
  std::ostringstream table;
  table << "\n## Fidelity against " << reference << "\n\n"
        << "Each point against the same method and ratio over the " << reference << " KV, paired per question. "
        << "Identical: the share of\nquestions whose greedy answer has " << reference << "'s answer tokens exactly. "
        << "Answer KL: the mean over " << reference << "'s answer\ntokens (the first included) of KL(" << reference
        << " || point) of the next-token distribution, nats, both forced on " << reference << "'s answer\n"
        << "(the first token's distribution alone where that answer is empty). Gold LL and F1 deltas: the point minus "
        << reference << ",\nper question, then the mean. Intervals: 95% bootstrap over questions.\n\n"
        << "| method | kv | ratio | n | identical | answer KL | gold LL delta | F1 delta |\n"
        << "|---|---|---:|---:|---|---|---|---|\n";
  for (size_t i = 0; i < summary.points.size(); ++i) {
    const ReferenceFidelity& f = fidelity[i];
    if (f.n == 0) continue;
    const PointRuns& point = summary.points[i];
    table << "| " << method_name(point.method) << " | " << point.kv << " | " << fmt(point.ratio, 2) << " | " << f.n
          << " | " << with_interval(f.identical) << " | " << small_with_interval(f.kl) << " | "
          << signed_with_interval(f.gold_ll_delta) << " | " << signed_with_interval(f.f1_delta) << " |\n";
  }
  return table.str();
}

std::string plots_section(bool plotted) {
  if (plotted)
    return "\n## Plots\n\n"
           "![normalized F1](norm_f1.png)\n\n![log-likelihood recovery](norm_ll.png)\n\n![TTFT by phase](ttft.png)\n\n"
           "![KV deviation](kv_deviation.png)\n\nEach plot's gnuplot script (`*.gp`) sits next to it.\n";
  return "\n## Plots\n\n"
         "gnuplot was not found, so the plots were not drawn (scripts/setup.sh installs it; then rerun with "
         "`--report-only`).\n";
}

std::string files_note(const std::string& out_dir) {
  return "\nPer-question answers and scores: `" + fs::path(eval_results_path(out_dir)).filename().string() +
         "`; the tables as CSV: `metrics.csv`, `kv_deviation.csv`.\n";
}

}  // namespace

bool write_eval_report(const std::string& out_dir, const ReportContext& given) {
  const std::vector<EvalQuestion> questions = read_eval_results(out_dir);
  const nlohmann::json sweep = read_sweep_description(out_dir);
  ReportContext context = given;
  if (context.title.empty()) context.title = fs::path(sweep_text(sweep, "dataset", "")).filename().string();
  KVF_CHECK(!questions.empty(), out_dir, "/results.jsonl: no results to report (nor in results.jsonl.gz); run the "
            "sweep first");
  const SweepSummary summary = summarize(questions, out_dir);
  const std::string reference = sweep_text(sweep, "reference_kv", "");  // --reference-kv; "": none
  const FidelityColumns fidelity = reference.empty() ? FidelityColumns() : fidelity_columns(summary, reference);
  const fs::path dir(out_dir);
  write_file(dir / "metrics.csv", metrics_csv(summary.points, summary.aggregates, fidelity));
  write_file(dir / "kv_deviation.csv", deviation_csv(summary.points, summary.aggregates));
  const bool plotted = draw_figures(dir, summary, context.title);
  std::ostringstream report;
  report << report_header(questions, sweep, context) << measures_note(summary) << quality_table(summary)
         << reuse_gaps(summary) << (reference.empty() ? "" : fidelity_table(summary, fidelity, reference))
         << ttft_table(questions, summary) << plots_section(plotted) << files_note(out_dir);
  write_file(dir / "report.md", report.str());
  return plotted;
}

}  // namespace kvf
