// Time to first token of every kvrun method against full, side by side in one run (DESIGN.md §9): for each
// question, its first --chunks chunks (from the passages the store was built from), every method at every ratio,
// in rotating order, --runs times; medians per phase. Chunk KV is read from the store on every query (cache off),
// so load is the real cost of fetching it (--cache-mb keeps them in the engine's chunk cache instead: device memory
// on the GPU, loaded by the warm-up run); with --cold the page cache drops the mode's shard files before every
// query (posix_fadvise DONTNEED), so load reads them from the disk. Prints a markdown table; bench/ttft_bench.sh
// and bench/cold_load_bench.sh build the store.
#include <fcntl.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/cpu_usage.h"
#include "core/error.h"
#include "fusion/query_engine.h"
#include "fusion/query_file.h"
#include "model/llama_config.h"
#include "store/chunk_kv.h"

namespace {

using kvf::FusionMethod;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Setting {
  FusionMethod method;
  double ratio;
  std::string label() const {
    if (method == FusionMethod::Full || method == FusionMethod::Reuse) return kvf::method_name(method);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %.2f", kvf::method_name(method).c_str(), ratio);
    return buf;
  }
};

// The multiply-adds a setting computes, from one answer's layout: the bound arithmetic puts on its TTFT ratio is
// full's count over the setting's. Linear layers cost every computed row the same; attention costs a row as many
// keys as it sees, so the question's rows (which see the whole prompt) and recomputed rows late in the context cost
// more than full's average row (which sees half of it); each recomputed row is counted at its own position. The
// selection passes: cacheblend runs the context through layer 0 and layer 1's projections; a3 the context and the
// question through layer 0 and layer 1's projections and attention; fusion the question through every layer but
// the last one's output projection and MLP. The one row of logits every setting computes is left out.
struct MacModel {
  double qkv, rest, attend;  // per row and layer: Q/K/V projections, output projection and MLP; per row, key, layer
  int layers;
  explicit MacModel(const kvf::LlamaConfig& c)
      : qkv((double)c.hidden * (c.n_heads + 2.0 * c.n_kv_heads) * c.head_dim),
        rest((double)c.n_heads * c.head_dim * c.hidden + 3.0 * c.hidden * c.ffn),
        attend(2.0 * c.n_heads * c.head_dim),
        layers(c.n_layers) {}
  // rows that each see `keys` keys, through one whole layer
  double layer(double rows, double keys) const { return rows * (qkv + rest + attend * keys); }
  // rows at positions first .. first + rows - 1 after `before` keys, each seeing the keys up to itself
  double causal_layer(double rows, double before) const { return layer(rows, before + (rows + 1) / 2); }
};

double setting_macs(const MacModel& m, const kvf::QueryAnswer& a, FusionMethod method) {
  const double n = (double)a.n_context_tokens, q = (double)a.n_question_tokens;
  const double s = (double)a.n_prompt_tokens - n - q, end = (double)a.n_prompt_tokens, L = m.layers;
  if (method == FusionMethod::Full) return L * m.causal_layer(n + q, s);
  double recomputed = 0;
  for (int64_t i : a.recomputed) recomputed += L * m.layer(1, s + (double)i + 1);  // sees the keys up to itself
  const double answer = recomputed + L * m.causal_layer(q, end - q);
  if (a.n_recomputed == 0 || a.n_recomputed == (int64_t)n) return answer;
  double probe = 0;
  if (method == FusionMethod::CacheBlend) probe = m.causal_layer(n, s) + n * m.qkv;
  if (method == FusionMethod::A3) probe = 2 * m.causal_layer(n + q, s) - (n + q) * m.rest;
  if (method == FusionMethod::Fusion) probe = L * m.causal_layer(q, end - q) - q * m.rest;
  return answer + probe;
}

// Asks the kernel to forget the cached pages of every shard of `mode`: the next read goes to the disk.
void drop_cached_shards(const std::string& store, const std::string& mode) {
  for (const auto& entry : std::filesystem::directory_iterator(store + "/kv")) {
    if (kvf::kv_mode_of_shard("kv/" + entry.path().filename().string()) != mode) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY);
    KVF_CHECK(fd >= 0, entry.path().string(), ": cannot open to drop its cached pages");
    ::fdatasync(fd);
    const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    KVF_CHECK(rc == 0, entry.path().string(), ": posix_fadvise(DONTNEED) failed");
  }
}

using OpsBySetting = std::map<std::string, std::map<std::string, kvf::OpStats>>;

// --profile: each setting's ops by stage of the answer (QueryEngine::op_stats), milliseconds per query, then each
// stage's total. --profile-host: the same for the time each call kept the host, and each stage's wall time beside
// its calls' total (`walls`).
void print_op_split(const std::vector<Setting>& settings, const OpsBySetting& ops, const OpsBySetting& walls,
                    bool host_calls, double queries) {
  std::printf("\nBackend ops per query by stage (%s), ms and calls:\n\n| stage/op |",
              host_calls ? "--profile-host: each call's time on the host, nothing waited for; a stage's calls "
                           "near its wall time mean it is bound by launching ops"
                         : "--profile: each op waited for");
  for (const Setting& s : settings) std::printf(" %s |", s.label().c_str());
  std::printf("\n|---|");
  for (size_t i = 0; i < settings.size(); ++i) std::printf("---:|");
  std::printf("\n");
  std::set<std::string> names;
  for (const auto& [label, by_op] : ops)
    for (const auto& entry : by_op) names.insert(entry.first);
  const auto cell = [&](const Setting& s, const std::string& op) -> kvf::OpStats {
    const auto it = ops.find(s.label());
    if (it == ops.end() || !it->second.count(op)) return {};
    return it->second.at(op);
  };
  for (const std::string& op : names) {
    std::printf("| %s |", op.c_str());
    for (const Setting& s : settings) {
      const kvf::OpStats st = cell(s, op);
      std::printf(" %.1f (%.0f) |", 1e3 * st.seconds / queries, st.calls / queries);
    }
    std::printf("\n");
  }
  // Each stage's ops together ("select/..." -> select), then every op.
  std::set<std::string> stages;
  for (const std::string& op : names)
    if (op.find('/') != std::string::npos) stages.insert(op.substr(0, op.find('/')));
  const auto total_row = [&](const std::string& label, const std::string& prefix) {
    std::printf("| %s |", label.c_str());
    for (const Setting& s : settings) {
      double total = 0;
      for (const std::string& op : names)
        if (op.compare(0, prefix.size(), prefix) == 0) total += cell(s, op).seconds;
      std::printf(" %.1f |", 1e3 * total / queries);
    }
    std::printf("\n");
  };
  const auto wall_row = [&](const std::string& stage) {
    std::printf("| %s, wall |", stage.c_str());
    for (const Setting& s : settings) {
      const auto it = walls.find(s.label());
      const bool has = it != walls.end() && it->second.count(stage);
      std::printf(" %.1f |", has ? 1e3 * it->second.at(stage).seconds / queries : 0.0);
    }
    std::printf("\n");
  };
  for (const std::string& stage : stages) {
    total_row(stage + (host_calls ? ", all calls" : ", all ops"), stage + "/");
    if (host_calls) wall_row(stage);
  }
  total_row(host_calls ? "all calls" : "all ops", "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_ttft_bench: TTFT of kvrun's methods against full, side by side"};
  std::string store, queries, model = "smollm2", compute = "fast", kv_mode = "independent", backend = "cpu";
  bool cold = false, profile = false, profile_host = false;
  double cache_mb = 0;
  int questions = 5, chunks = 10, runs = 5, threads = 2;
  std::vector<double> ratios{0.0, 0.05, 0.15, 0.3, 1.0};
  app.add_option("--store", store, "store built from the questions' passages")->required();
  app.add_option("--queries", queries, "question file with \"contexts\"")->required();
  app.add_option("--model", model, "the store's decoder")->capture_default_str();
  app.add_option("--questions", questions, "questions to time")->capture_default_str();
  app.add_option("--chunks", chunks, "chunks per question (its first ones)")->capture_default_str();
  app.add_option("--runs", runs, "timed runs per setting and question (after one warm-up)")->capture_default_str();
  app.add_option("--threads", threads, "worker threads")->capture_default_str();
  app.add_option("--compute", compute, "fast or f32 (the reference)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "f32"}));
  app.add_option("--backend", backend, "where the model runs: cpu | cuda (built with nvcc, needs a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--ratios", ratios, "recompute ratios of cacheblend, a3 and fusion")->delimiter(',');
  std::vector<std::string> methods{"full", "reuse", "cacheblend", "a3", "fusion"};
  app.add_option("--methods", methods, "methods to time")->delimiter(',')->capture_default_str();
  app.add_option("--kv", kv_mode, "stored KV mode read (any mode kvprep prefill or compress wrote)")
      ->capture_default_str();
  app.add_flag("--cold", cold, "drop the mode's shard files from the page cache before every query");
  app.add_option("--cache-mb", cache_mb,
                 "chunk KV kept in the engine's cache between queries, MiB (0: every query reads the store)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bool decode_at_load = false;
  app.add_flag("--decode-low-bit-at-load", decode_at_load, "int4/int3/int2 KV: decode to f32 when read (kvrun's flag)");
  app.add_flag("--profile", profile,
               "also time every backend op and print each method's split by stage: place, select, prefill (each op "
               "is waited for, so the TTFT columns of a profiled run are not the method's own: take them from a run "
               "without it)");
  app.add_flag("--profile-host", profile_host,
               "the same split timing each op's call on the host, nothing waited for, with each stage's wall time "
               "(synchronised where stages change): where a stage's calls take about its wall time, launching ops "
               "bounds it, not running them")
      ->excludes("--profile");
  CLI11_PARSE(app, argc, argv);
  try {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    kvf::QueryEngineOptions eo;
    eo.store_dir = store;
    eo.model = model;
    eo.cache_bytes = (uint64_t)(cache_mb * (1 << 20));  // 0: every query reads its chunks from the store
    eo.compute = kvf::compute_mode_from_name(compute);
    eo.kv_mode = kv_mode;
    eo.backend = backend;
    eo.decode_low_bit_at_load = decode_at_load;
    eo.profile_ops = profile || profile_host;
    eo.profile_host_calls = profile_host;
    kvf::QueryEngine engine(eo);
    std::vector<kvf::ResolvedQuery> picked;
    for (const kvf::QueryRecord& r : kvf::read_query_file(queries)) {
      if ((int)picked.size() == questions) break;
      kvf::ResolvedQuery q = engine.resolve(r.query, 0);
      if ((int)q.chunk_ids.size() < chunks) continue;
      q.chunk_ids.resize((size_t)chunks);
      picked.push_back(q);
    }
    KVF_CHECK((int)picked.size() == questions, queries, ": only ", picked.size(), " questions have ", chunks,
              " chunks");
    std::vector<Setting> settings;
    for (const std::string& name : methods) {
      const FusionMethod m = kvf::parse_method(name);
      if (m == FusionMethod::Full || m == FusionMethod::Reuse)
        settings.push_back({m, m == FusionMethod::Full ? 1.0 : 0.0});
      else
        for (double r : ratios) settings.push_back({m, r});
    }

    kvf::AnswerOptions ao;
    ao.max_tokens = 1;  // the first token is all TTFT needs
    std::map<std::string, std::vector<kvf::QueryAnswer>> timed;
    OpsBySetting ops, walls;  // --profile(-host): per setting, summed over runs
    std::vector<double> n_context, n_question;
    kvf::CpuSample timed_from;  // taken after the warm-up
    for (int run = 0; run <= runs; ++run) {
      if (run == 1) timed_from = kvf::sample_cpu();
      for (const kvf::ResolvedQuery& q : picked) {
        // Rotate the order every run so no setting always follows another (cache and frequency effects).
        for (size_t i = 0; i < settings.size(); ++i) {
          const Setting& s = settings[(i + (size_t)run) % settings.size()];
          ao.method = s.method;
          ao.recompute = s.ratio;
          if (cold) drop_cached_shards(store, kv_mode);
          engine.reset_op_stats();
          kvf::QueryAnswer a = engine.answer(q, ao);
          const std::map<std::string, kvf::OpStats> stage_walls = engine.stage_walls();  // ends the last stage
          if (run == 0) continue;  // warm-up
          const auto add = [&](std::map<std::string, kvf::OpStats>& into, const auto& from) {
            for (const auto& [key, st] : from) {
              into[key].seconds += st.seconds;
              into[key].calls += st.calls;
            }
          };
          add(walls[s.label()], stage_walls);
          add(ops[s.label()], engine.op_stats());
          if (&s == &settings.front()) {  // every method sees the same tokens: count them once a question
            n_context.push_back((double)a.n_context_tokens);
            n_question.push_back((double)a.n_question_tokens);
          }
          timed[s.label()].push_back(std::move(a));
        }
      }
      std::fprintf(stderr, "ttft bench: run %d/%d done\n", run, runs);
    }
    const double others = kvf::others_cpu_share(timed_from, kvf::sample_cpu());
    const double full_ttft = [&] {
      std::vector<double> v;
      for (const auto& a : timed["full"]) v.push_back(a.ms.ttft);
      return v.empty() ? 0.0 : median(v);
    }();
    const double n = median(n_context), q = median(n_question);
    std::printf("%d questions x %d chunks: median %.0f context tokens, %.0f question tokens; %d runs each, %d "
                "threads; KV mode %s, chunk KV: %s\n\n",
                questions, chunks, n, q, runs, threads, kv_mode.c_str(),
                cold             ? "read from the store, page cache dropped before every query"
                : cache_mb > 0   ? "held in the chunk cache (backend memory)"
                                 : "read from the store, warm page cache");
    const MacModel macs(engine.model_config());
    std::printf("| method | recompute | ttft ms | load | select | prefill | speedup vs full | bound |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Setting& s : settings) {
      std::vector<double> ttft, load, select, prefill, bound;
      for (const auto& a : timed[s.label()]) {
        bound.push_back(setting_macs(macs, a, FusionMethod::Full) / setting_macs(macs, a, s.method));
        ttft.push_back(a.ms.ttft);
        load.push_back(a.ms.load);
        select.push_back(a.ms.select);
        prefill.push_back(a.ms.prefill);
      }
      const double t = median(ttft);
      char speedup[32] = "-";  // full not timed: nothing to compare with
      if (full_ttft > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", full_ttft / t);
      std::printf("| %s | %.2f | %.1f | %.1f | %.1f | %.1f | %s | %.2fx |\n", kvf::method_name(s.method).c_str(),
                  s.method == FusionMethod::Full ? 1.0 : s.ratio, t, median(load), median(select), median(prefill),
                  speedup, median(bound));
    }
    if (std::isfinite(others))  // other work on the cores makes these times not the methods' own
      std::printf("\nOther processes used %.1f%% of the CPUs during the timed runs%s\n", 100 * others,
                  others > kvf::kOthersCpuNoticed ? ": these times were taken beside other work." : ".");
    if (profile || profile_host) print_op_split(settings, ops, walls, profile_host, (double)runs * questions);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
