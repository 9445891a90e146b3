#include "pipeline/pipeline.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "cluster/cluster.h"
#include "compress/compress_recipes.h"
#include "compress/compress_stage.h"
#include "core/error.h"
#include "io/model_paths.h"
#include "model/llama_weights.h"
#include "pipeline/kv_mode_plan.h"
#include "prep/chunk_stage.h"
#include "prep/precompute_view.h"
#include "prep/prefill_stage.h"
#include "prep/retrieval_stages.h"
#include "prep/store_model.h"
#include "prep/store_prune.h"
#include "prep/store_publish.h"
#include "store/kv_shard.h"
#include "store/store_lock.h"

namespace kvf {
namespace {

constexpr int kDefaultThreads = 0;  // `threads`: every core

// Applies "a.b=value" to the YAML tree.
void apply_override(YAML::Node root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  KVF_CHECK(eq != std::string::npos && eq > 0, "--set '", assignment, "': expected key=value");
  const std::string key = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    fail("--set '", assignment, "': the value is not YAML (", e.what(), ")");
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::vector<YAML::Node> path{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = path.back()[parts[i]];
    if (!next.IsDefined() || next.IsNull()) next = YAML::Node(YAML::NodeType::Map);
    path.back()[parts[i]] = next;
    path.push_back(path.back()[parts[i]]);
  }
  path.back()[parts.back()] = value;
}

// Typed access that names the file and the key on a missing or ill-typed value.
class Config {
 public:
  Config(std::string file, YAML::Node root) : file_(std::move(file)), root_(std::move(root)) {}

  template <typename T>
  T get(const std::string& section, const std::string& key, const T& dflt) const {
    const YAML::Node parent = section.empty() ? root_ : root_[section];
    if (!parent.IsDefined() || !parent.IsMap()) return dflt;  // a missing section: defaults (check_keys vets types)
    const YAML::Node node = parent[key];
    if (!node.IsDefined() || node.IsNull()) return dflt;
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(file_, ": '", section.empty() ? key : section + "." + key, "' has the wrong type (", YAML::Dump(node), ")");
    }
  }
  std::string required(const std::string& key) const {
    const std::string v = get<std::string>("", key, "");
    KVF_CHECK(!v.empty(), file_, ": '", key, "' is required");
    return v;
  }
  // Rejects keys the pipeline does not know: a typo must not silently fall back to a default.
  void check_keys() const {
    const std::map<std::string, std::set<std::string>> known = {
        {"chunk", {"chunk_tokens", "max_chunk_tokens", "keep_removed"}},
        {"index",
         {"kind", "ivf_nlist", "ivf_nprobe", "pq_m", "pq_refine", "train_sample", "hnsw_m", "hnsw_ef_construction",
          "hnsw_ef_search"}},
        {"embed", {"backend", "batch"}},
        {"neighbors", {"top_n"}},
        {"prefill",
         {"modes", "dtype", "compute", "backend", "system", "batch_tokens", "shard_mb", "neighbor_cache_mb",
          "neighbor_order", "anchor_scores", "refresh_neighbors"}}};
    const std::set<std::string> scalars = {"store", "corpus", "model", "embedder", "threads"};
    KVF_CHECK(root_.IsMap(), file_, ": expected a mapping of settings");
    for (const auto& kv : root_) {
      const std::string key = kv.first.as<std::string>();
      if (scalars.count(key)) continue;
      if (key == "eval") continue;  // the sweep settings kvrun eval reads (it checks them)
      if (key == "compress") {
        check_compress_list(kv.second);
        continue;
      }
      const auto it = known.find(key);
      KVF_CHECK(it != known.end(), file_, ": unknown key '", key, "'");
      KVF_CHECK(kv.second.IsMap(), file_, ": '", key, "' must be a mapping");
      for (const auto& sub : kv.second)
        KVF_CHECK(it->second.count(sub.first.as<std::string>()), file_, ": unknown key '", key, ".",
                  sub.first.as<std::string>(), "'");
    }
  }

  // Values every stage would refuse, refused before the first one runs: one line naming the file, the key as
  // the YAML spells it and the value.
  void check_values() const {
    check_no_duplicate_keys(root_, "");
    const auto one_of = [&](const std::string& section, const std::string& key, const std::string& dflt,
                            std::initializer_list<const char*> allowed, const char* list) {
      const std::string v = get<std::string>(section, key, dflt);
      for (const char* a : allowed)
        if (v == a) return;
      fail(file_, ": '", section, ".", key, "' is '", v, "': expected ", list);
    };
    // Settings an enum's own parser reads: it names the values it takes, so they are listed in one place.
    const auto parsed_by = [&](const std::string& section, const std::string& key, const std::string& dflt,
                               const std::function<void(const std::string&)>& parse) {
      try {
        parse(get<std::string>(section, key, dflt));
      } catch (const Error& e) {
        fail(file_, ": '", section, ".", key, "': ", e.what());
      }
    };
    const auto in_range = [&](const std::string& section, const std::string& key, int64_t dflt, int64_t lo,
                              int64_t hi, const char* meaning) {
      const int64_t v = get<int64_t>(section, key, dflt);
      KVF_CHECK(v >= lo && v <= hi, file_, ": '", section.empty() ? key : section + "." + key, "' is ", v,
                ": expected ", meaning);
    };
    // The defaults are the stages' own (each options struct), as run_pipeline reads them.
    const PrefillStageOptions prefill_defaults;
    const EmbedStageOptions embed_defaults;
    const ChunkerOptions chunker_defaults;
    const NeighborStageOptions neighbor_defaults;
    const IndexSpec index_defaults;
    one_of("prefill", "dtype", kv_dtype_name(prefill_defaults.dtype), {"f16", "bf16"}, "f16 or bf16");
    parsed_by("prefill", "compute", compute_mode_name(prefill_defaults.compute),
              [](const std::string& v) { compute_mode_from_name(v); });
    one_of("prefill", "backend", prefill_defaults.backend, {"cpu", "cuda"}, "cpu or cuda");
    one_of("embed", "backend", embed_defaults.backend, {"cpu", "cuda"}, "cpu or cuda");
    in_range("embed", "batch", embed_defaults.batch_size, 1, 4096, "1 to 4096 texts per forward pass");
    parsed_by("prefill", "neighbor_order", neighbor_order_name(prefill_defaults.neighbor_order),
              [](const std::string& v) { neighbor_order_from_name(v); });
    one_of("index", "kind", index_defaults.kind, {"flat", "ivf", "ivfpq", "hnsw"}, "flat, ivf, ivfpq or hnsw");
    in_range("", "threads", kDefaultThreads, 0, 1 << 16, "0 (every core) or a positive thread count");
    in_range("chunk", "chunk_tokens", (int64_t)chunker_defaults.chunk_tokens, 1, 1 << 20, "1 to 1048576 tokens");
    in_range("chunk", "max_chunk_tokens", (int64_t)chunker_defaults.max_tokens, 0, 1 << 20,
             "0 (1.25 x chunk_tokens) or 1 to 1048576 tokens");
    in_range("neighbors", "top_n", neighbor_defaults.top_n, 1, 100,
             "1 to 100 neighbours (prefill's similarity view reads them all)");
    in_range("prefill", "batch_tokens", prefill_defaults.batch_tokens, 1, 1 << 24,
             "a positive number of tokens per forward pass");
    in_range("prefill", "shard_mb", (int64_t)(prefill_defaults.shard_bytes >> 20), 1, 1 << 20,
             "1 to 1048576 MB of KV per shard");
    in_range("prefill", "neighbor_cache_mb", (int64_t)(prefill_defaults.neighbor_cache_bytes >> 20), 0, 1 << 24,
             "0 to 16777216 MiB of neighbour KV kept in memory");
    using IndexDefault = std::pair<const char*, int64_t>;  // a key and its default
    for (const IndexDefault& setting : {IndexDefault{"ivf_nlist", index_defaults.ivf_nlist},
                                        IndexDefault{"pq_m", index_defaults.pq_m},
                                        IndexDefault{"train_sample", index_defaults.train_sample}})
      in_range("index", setting.first, setting.second, 0, 1 << 30, "0 (automatic) or a positive count");
    in_range("index", "pq_refine", index_defaults.pq_refine, 0, 1 << 10,
             "0 (no exact re-ranking) or a positive factor");
    for (const IndexDefault& setting : {IndexDefault{"ivf_nprobe", index_defaults.ivf_nprobe},
                                        IndexDefault{"hnsw_ef_construction", index_defaults.hnsw_ef_construction},
                                        IndexDefault{"hnsw_ef_search", index_defaults.hnsw_ef_search}})
      in_range("index", setting.first, setting.second, 1, 1 << 30, "a positive count");
    in_range("index", "hnsw_m", index_defaults.hnsw_m, 2, 1 << 16, "2 or more links per node");
    const YAML::Node prefill = root_["prefill"];  // IsDefined first: a missing key's node throws on IsMap
    const YAML::Node modes = prefill.IsDefined() && prefill.IsMap() ? prefill["modes"] : YAML::Node();
    KVF_CHECK(!modes.IsDefined() || modes.IsNull() || modes.IsSequence(), file_, ": 'prefill.modes' is ",
              YAML::Dump(modes), ": expected a list such as [independent, similarity]");
  }

  // YAML allows a key twice in a mapping and keeps one silently: a pipeline may not.
  void check_no_duplicate_keys(const YAML::Node& node, const std::string& path) const {
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) check_no_duplicate_keys(node[i], path + "[" + std::to_string(i) + "]");
      return;
    }
    if (!node.IsMap()) return;
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      const std::string full = path.empty() ? key : path + "." + key;
      KVF_CHECK(seen.insert(key).second, file_, ": key '", full, "' appears twice");
      check_no_duplicate_keys(kv.second, full);
    }
  }

  // compress: a list of new KV modes, each a mapping of kvprep compress's options.
  void check_compress_list(const YAML::Node& list) const {
    static const std::set<std::string> keys = {"to",           "from",          "anchors",         "anchor_mode",
                                               "anchor_score", "segment",       "share_layers",    "share_threshold",
                                               "quant",        "quant_group",   "keep_first",      "rotate",
                                               "v_levels",     "entropy",       "recipe"};
    KVF_CHECK(list.IsSequence(), file_, ": 'compress' must be a list of modes ({to: NAME, from: MODE, ...})");
    for (size_t i = 0; i < list.size(); ++i) {
      KVF_CHECK(list[i].IsMap(), file_, ": compress[", i, "] must be a mapping");
      for (const auto& kv : list[i])
        KVF_CHECK(keys.count(kv.first.as<std::string>()), file_, ": unknown key 'compress[", i, "].",
                  kv.first.as<std::string>(), "'");
      KVF_CHECK(list[i]["to"] && list[i]["from"], file_, ": compress[", i, "] needs 'to' and 'from'");
    }
  }
  const YAML::Node& root() const { return root_; }

 private:
  std::string file_;
  YAML::Node root_;
};

template <typename T>
T item(const std::string& file, const YAML::Node& node, size_t i, const char* key, const T& dflt) {
  if (!node[key]) return dflt;
  try {
    return node[key].as<T>();
  } catch (const YAML::Exception&) {
    fail(file, ": 'compress[", i, "].", key, "' has the wrong type (", YAML::Dump(node[key]), ")");
  }
}

// The file with the overrides applied, every key checked.
Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    fail(path, ": ", e.what());
  }
  for (const std::string& o : overrides) apply_override(root, o);
  Config config(path, root);
  try {  // a key that is no plain name (a mapping or a list used as a key) fails yaml-cpp's conversions
    config.check_keys();
    config.check_values();
  } catch (const YAML::Exception& e) {
    fail(path, ": ", e.what());
  }
  return config;
}

std::vector<CompressEntry> compress_entries(const std::string& path, const Config& config) {
  const YAML::Node compress = config.root()["compress"];
  std::vector<CompressEntry> entries;
  for (size_t i = 0; compress && i < compress.size(); ++i)
    entries.push_back({item<std::string>(path, compress[i], i, "to", ""),
                       item<std::string>(path, compress[i], i, "from", "")});
  return entries;
}

// Every compress entry as kvprep compress options, each checked (check_compress_options) before any stage runs:
// a bad value in the last entry must not wait for every earlier stage to finish.
std::vector<CompressStageOptions> compress_options(const std::string& path, const Config& config,
                                                   const std::vector<CompressEntry>& entries,
                                                   const std::string& store, const std::string& model) {
  const YAML::Node compress = config.root()["compress"];
  std::vector<CompressStageOptions> all;
  for (size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node& entry = compress[i];
    CompressStageOptions options;  // its defaults stand for keys the entry leaves out
    options.store_dir = store;
    options.model_path = model;
    options.to = entries[i].to;
    options.from = entries[i].from;
    options.anchors = item<double>(path, entry, i, "anchors", options.anchors);
    options.anchor_mode = item<std::string>(path, entry, i, "anchor_mode", options.anchor_mode);
    options.anchor_score = item<std::string>(path, entry, i, "anchor_score", options.anchor_score);
    options.segment = item<int>(path, entry, i, "segment", options.segment);
    options.share_layers = item<int>(path, entry, i, "share_layers", options.share_layers);
    options.share_threshold = item<double>(path, entry, i, "share_threshold", options.share_threshold);
    options.quant = item<std::string>(path, entry, i, "quant", options.quant);
    options.quant_group = item<int>(path, entry, i, "quant_group", options.quant_group);
    options.keep_first = item<int>(path, entry, i, "keep_first", options.keep_first);
    options.rotate = item<bool>(path, entry, i, "rotate", options.rotate);
    options.v_levels = item<std::string>(path, entry, i, "v_levels", options.v_levels);
    options.entropy = h5::parse_compression(
        item<std::string>(path, entry, i, "entropy", h5::compression_name(options.entropy)),
        path + ": compress[" + std::to_string(i) + "].entropy");
    if (entry["recipe"]) {
      const std::string where = path + ": compress[" + std::to_string(i) + "]";
      for (const std::string& key : compress_recipe_keys())
        KVF_CHECK(!entry[key], where, ": 'recipe' sets '", key, "'; give the recipe or the keys, not both");
      apply_compress_recipe(item<std::string>(path, entry, i, "recipe", ""), options, where + ".recipe");
    }
    try {
      check_compress_options(options);
    } catch (const Error& e) {
      fail(path, ": compress[", i, "] (to: ", options.to, "): ", e.what());
    }
    all.push_back(std::move(options));
  }
  return all;
}

KvModePlan kv_plan(const std::string& path, const Config& config, const std::vector<CompressEntry>& compress,
                   const KvModeRequest& request) {
  return plan_kv_modes(path, config.get<std::vector<std::string>>("prefill", "modes", {"independent"}), compress,
                       request);
}

// What every step of one run shares: the file and its settings, the store and the decoder, the ranks, and where
// each step's outcome goes.
struct PipelineRun {
  const std::string& path;
  const Config& config;
  const std::string& store;
  const std::string& model;
  const Cluster& cluster;
  void (*on_step)(const PipelineStep&);

  // Each step's outcome is told once, by the leader.
  void report(const std::string& step, const std::string& outcome) const {
    if (cluster.leader()) on_step({step, outcome});
  }
};

// The store's lock, held by the leader for every rank (which clears killed writers' temporaries) before any rank
// writes; each stage splits its work over the ranks and only the leader commits (docs/scale.md). A store complete
// before this run (one made before generations existed, say) is published first, so readers keep its tables while
// the stages replace the working ones (prep/store_publish.h).
std::optional<StoreLock> lock_store(const Cluster& cluster, const std::string& store, bool wait_lock) {
  std::optional<StoreLock> lock;
  if (cluster.leader()) lock.emplace(StoreLock::acquire(store, wait_lock, true));
  if (cluster.leader() && has_manifest(store)) publish_store_generation(store);
  cluster.barrier();
  return lock;
}

// Each stage's options start from its own defaults: they stand for keys the YAML leaves out (the values were
// checked by load_config).
void chunk_step(const PipelineRun& run) {
  ChunkStageOptions options;
  options.corpus = run.config.required("corpus");
  options.store_dir = run.store;
  options.model_path = run.model;
  options.chunker.chunk_tokens = run.config.get<size_t>("chunk", "chunk_tokens", options.chunker.chunk_tokens);
  options.chunker.max_tokens = run.config.get<size_t>("chunk", "max_chunk_tokens", options.chunker.max_tokens);
  options.keep_removed = run.config.get<bool>("chunk", "keep_removed", options.keep_removed);
  const ChunkStageResult result = run_chunk_stage(options);
  const std::string removed = result.removed_chunks ? ", " + std::to_string(result.removed_chunks) + " removed" : "";
  run.report("chunk", result.unchanged ? "up to date" : std::to_string(result.new_chunks) + " new chunks" + removed);
}

void embed_step(const PipelineRun& run) {
  EmbedStageOptions options;
  options.store_dir = run.store;
  options.embedder_dir = resolve_model(run.config.get<std::string>("", "embedder", kDefaultEmbedder));
  options.backend = run.config.get<std::string>("embed", "backend", options.backend);
  options.batch_size = run.config.get<int>("embed", "batch", options.batch_size);
  const EmbedStageResult result = run_embed_stage(options);
  run.report("embed", result.unchanged ? "up to date" : std::to_string(result.embedded) + " chunks embedded");
}

void index_step(const PipelineRun& run) {
  const Config& config = run.config;
  IndexStageOptions options;
  IndexSpec& spec = options.spec;
  options.store_dir = run.store;
  spec.kind = config.get<std::string>("index", "kind", spec.kind);
  spec.ivf_nlist = config.get<int>("index", "ivf_nlist", spec.ivf_nlist);
  spec.ivf_nprobe = config.get<int>("index", "ivf_nprobe", spec.ivf_nprobe);
  spec.pq_m = config.get<int>("index", "pq_m", spec.pq_m);
  spec.pq_refine = config.get<int>("index", "pq_refine", spec.pq_refine);
  spec.train_sample = config.get<int64_t>("index", "train_sample", spec.train_sample);
  spec.hnsw_m = config.get<int>("index", "hnsw_m", spec.hnsw_m);
  spec.hnsw_ef_construction = config.get<int>("index", "hnsw_ef_construction", spec.hnsw_ef_construction);
  spec.hnsw_ef_search = config.get<int>("index", "hnsw_ef_search", spec.hnsw_ef_search);
  const IndexStageResult result = run_index_stage(options);
  run.report("index", result.unchanged ? "up to date" : std::to_string(result.vectors) + " vectors indexed");
}

// Returns the neighbours recorded per chunk (prefill's similarity view reads them all).
int neighbors_step(const PipelineRun& run) {
  NeighborStageOptions options;
  options.store_dir = run.store;
  options.top_n = run.config.get<int>("neighbors", "top_n", options.top_n);
  const NeighborStageResult result = run_neighbor_stage(options);
  run.report("neighbors", result.unchanged ? "up to date" : std::to_string(result.chunks) + " chunks");
  return options.top_n;
}

// `mode` of the plan's prefill modes, with `top_n` neighbours.
void prefill_step(const PipelineRun& run, const std::string& mode, const std::vector<std::string>& modes, int top_n,
                  const std::set<std::string>& only_docs) {
  const Config& config = run.config;
  PrefillStageOptions options;
  options.store_dir = run.store;
  options.model_path = run.model;
  options.mode = mode;
  options.top_n = top_n;
  options.neighbor_order = neighbor_order_from_name(
      config.get<std::string>("prefill", "neighbor_order", neighbor_order_name(options.neighbor_order)));
  options.dtype =
      parse_kv_dtype(config.get<std::string>("prefill", "dtype", kv_dtype_name(options.dtype)), "prefill.dtype");
  options.compute =
      compute_mode_from_name(config.get<std::string>("prefill", "compute", compute_mode_name(options.compute)));
  options.backend = config.get<std::string>("prefill", "backend", options.backend);
  options.system_message = config.get<std::string>("prefill", "system", options.system_message);
  options.batch_tokens = config.get<int>("prefill", "batch_tokens", options.batch_tokens);
  options.shard_bytes = config.get<uint64_t>("prefill", "shard_mb", options.shard_bytes >> 20) << 20;
  options.neighbor_cache_bytes =
      config.get<uint64_t>("prefill", "neighbor_cache_mb", options.neighbor_cache_bytes >> 20) << 20;
  options.record_anchor_scores = config.get<bool>("prefill", "anchor_scores", options.record_anchor_scores);
  options.refresh_changed_neighbors =
      config.get<bool>("prefill", "refresh_neighbors", options.refresh_changed_neighbors);
  options.only_docs = only_docs;
  options.with_similarity_neighbors =
      mode == "independent" && std::count(modes.begin(), modes.end(), "similarity") > 0;
  const PrefillStageResult result = run_prefill_stage(options);
  const std::string stale =
      result.stale ? ", " + std::to_string(result.stale) + " stale (their neighbours changed)" : "";
  run.report("prefill " + mode,
             (result.unchanged ? "up to date" : std::to_string(result.computed) + " chunks computed") + stale);
}

// One compress entry (its options checked by compress_options), by the leader alone while the others wait.
void compress_step(const PipelineRun& run, CompressStageOptions options) {
  options.model_path = run.model;
  CompressStageResult result;
  if (run.cluster.leader()) result = run_compress_stage(options);
  run.cluster.barrier();
  const uint64_t bytes_per_token = result.tokens ? result.stored_bytes / result.tokens : 0;
  run.report("compress " + options.to,
             result.unchanged ? "up to date"
                              : std::to_string(result.computed) + " chunks, " + std::to_string(bytes_per_token) +
                                    " bytes/token");
}

// The prefill and compress stages publish when they complete the store; an update that changed only the index
// (its settings) is published here. What no reader reaches any more (removed documents' KV, superseded entries)
// goes once it is published.
void publish_step(const PipelineRun& run) {
  if (!run.cluster.leader() || !has_manifest(run.store)) return;
  const PublishResult published = publish_store_generation(run.store);
  run.report("publish", !published.waiting.empty()
                            ? "waiting: " + published.waiting
                            : "readers use generation " + std::to_string(published.generation));
  const PruneResult pruned = prune_store({run.store, false, {}});
  run.report("prune", describe_prune(pruned));
}

}  // namespace

void check_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                    const KvModeRequest& request) {
  const Config config = load_config(path, overrides);
  config.required("store");
  config.required("corpus");
  const std::vector<CompressEntry> entries = compress_entries(path, config);
  kv_plan(path, config, entries, request);  // the file's own values first, then the model
  compress_options(path, config, entries, config.required("store"), "");
  resolve_model(model_for_store(config.get<std::string>("", "model", ""), config.required("store")));
}

void run_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                  void (*on_step)(const PipelineStep&), const KvModeRequest& request, bool wait_lock) {
  const Config config = load_config(path, overrides);
  const std::string store = config.required("store");
  const std::vector<CompressEntry> compress_list = compress_entries(path, config);
  const KvModePlan plan = kv_plan(path, config, compress_list, request);
  const std::vector<CompressStageOptions> compress = compress_options(path, config, compress_list, store, "");
  const Cluster& cluster = Cluster::world();
  const std::optional<StoreLock> lock = lock_store(cluster, store, wait_lock);
  const int threads = config.get<int>("", "threads", kDefaultThreads);
  tbb::global_control thread_limit(tbb::global_control::max_allowed_parallelism,
                                   threads > 0 ? threads : tbb::info::default_concurrency());
  const std::string model = resolve_model(model_for_store(config.get<std::string>("", "model", ""), store));
  if (!request.only_docs.empty() && !plan.compress.empty())
    fail(path, ": compressed KV modes (", compress_list[plan.compress[0]].to,
         ") are built over the whole store, not for some documents' chunks");

  const PipelineRun run{path, config, store, model, cluster, on_step};
  chunk_step(run);
  embed_step(run);
  index_step(run);
  const int top_n = neighbors_step(run);
  for (const std::string& mode : plan.prefill) prefill_step(run, mode, plan.prefill, top_n, request.only_docs);
  for (const size_t entry : plan.compress) compress_step(run, compress[entry]);
  publish_step(run);
}

}  // namespace kvf
