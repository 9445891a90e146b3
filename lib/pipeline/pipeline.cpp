#include "pipeline/pipeline.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "cluster/cluster.h"
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
    one_of("prefill", "dtype", "f16", {"f16", "bf16"}, "f16 or bf16");
    parsed_by("prefill", "compute", "fast", [](const std::string& v) { compute_mode_from_name(v); });
    one_of("prefill", "backend", "cpu", {"cpu", "cuda"}, "cpu or cuda");
    one_of("embed", "backend", "cpu", {"cpu", "cuda"}, "cpu or cuda");
    in_range("embed", "batch", 32, 1, 4096, "1 to 4096 texts per forward pass");
    parsed_by("prefill", "neighbor_order", "best-first", [](const std::string& v) { neighbor_order_from_name(v); });
    one_of("index", "kind", "flat", {"flat", "ivf", "ivfpq", "hnsw"}, "flat, ivf, ivfpq or hnsw");
    in_range("", "threads", 0, 0, 1 << 16, "0 (every core) or a positive thread count");
    in_range("chunk", "chunk_tokens", 256, 1, 1 << 20, "1 to 1048576 tokens");
    in_range("chunk", "max_chunk_tokens", 0, 0, 1 << 20, "0 (1.25 x chunk_tokens) or 1 to 1048576 tokens");
    in_range("neighbors", "top_n", 10, 1, 100, "1 to 100 neighbours (prefill's similarity view reads them all)");
    in_range("prefill", "batch_tokens", 1024, 1, 1 << 24, "a positive number of tokens per forward pass");
    in_range("prefill", "shard_mb", 256, 1, 1 << 20, "1 to 1048576 MB of KV per shard");
    in_range("prefill", "neighbor_cache_mb", 1024, 0, 1 << 24, "0 to 16777216 MiB of neighbour KV kept in memory");
    for (const char* key : {"ivf_nlist", "pq_m", "train_sample"})
      in_range("index", key, 0, 0, 1 << 30, "0 (automatic) or a positive count");
    in_range("index", "pq_refine", 4, 0, 1 << 10, "0 (no exact re-ranking) or a positive factor");
    for (const char* key : {"ivf_nprobe", "hnsw_ef_construction", "hnsw_ef_search"})
      in_range("index", key, 16, 1, 1 << 30, "a positive count");
    in_range("index", "hnsw_m", 32, 2, 1 << 16, "2 or more links per node");
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
                                               "quant",        "quant_group",   "keep_first"};
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
  Config cfg(path, root);
  try {  // a key that is no plain name (a mapping or a list used as a key) fails yaml-cpp's conversions
    cfg.check_keys();
    cfg.check_values();
  } catch (const YAML::Exception& e) {
    fail(path, ": ", e.what());
  }
  return cfg;
}

std::vector<CompressEntry> compress_entries(const std::string& path, const Config& cfg) {
  const YAML::Node compress = cfg.root()["compress"];
  std::vector<CompressEntry> entries;
  for (size_t i = 0; compress && i < compress.size(); ++i)
    entries.push_back({item<std::string>(path, compress[i], i, "to", ""),
                       item<std::string>(path, compress[i], i, "from", "")});
  return entries;
}

// Every compress entry as kvprep compress options, each checked (check_compress_options) before any stage runs:
// a bad value in the last entry must not wait for every earlier stage to finish.
std::vector<CompressStageOptions> compress_options(const std::string& path, const Config& cfg,
                                                   const std::vector<CompressEntry>& entries,
                                                   const std::string& store, const std::string& model) {
  const YAML::Node compress = cfg.root()["compress"];
  std::vector<CompressStageOptions> all;
  for (size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node& c = compress[i];
    CompressStageOptions o;
    o.store_dir = store;
    o.model_path = model;
    o.to = entries[i].to;
    o.from = entries[i].from;
    o.anchors = item<double>(path, c, i, "anchors", 0.0);
    o.anchor_mode = item<std::string>(path, c, i, "anchor_mode", o.anchor_mode);
    o.anchor_score = item<std::string>(path, c, i, "anchor_score", o.anchor_score);
    o.segment = item<int>(path, c, i, "segment", o.segment);
    o.share_layers = item<int>(path, c, i, "share_layers", 0);
    o.share_threshold = item<double>(path, c, i, "share_threshold", o.share_threshold);
    o.quant = item<std::string>(path, c, i, "quant", "");
    o.quant_group = item<int>(path, c, i, "quant_group", o.quant_group);
    o.keep_first = item<int>(path, c, i, "keep_first", o.keep_first);
    try {
      check_compress_options(o);
    } catch (const Error& e) {
      fail(path, ": compress[", i, "] (to: ", o.to, "): ", e.what());
    }
    all.push_back(std::move(o));
  }
  return all;
}

KvModePlan kv_plan(const std::string& path, const Config& cfg, const std::vector<CompressEntry>& compress,
                   const KvModeRequest& request) {
  return plan_kv_modes(path, cfg.get<std::vector<std::string>>("prefill", "modes", {"independent"}), compress,
                       request);
}

}  // namespace

void check_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                    const KvModeRequest& request) {
  const Config cfg = load_config(path, overrides);
  cfg.required("store");
  cfg.required("corpus");
  const std::vector<CompressEntry> entries = compress_entries(path, cfg);
  kv_plan(path, cfg, entries, request);  // the file's own values first, then the model
  compress_options(path, cfg, entries, cfg.required("store"), "");
  resolve_model(model_for_store(cfg.get<std::string>("", "model", ""), cfg.required("store")));
}

void run_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                  void (*on_step)(const PipelineStep&), const KvModeRequest& request, bool wait_lock) {
  const Config cfg = load_config(path, overrides);
  const std::string store = cfg.required("store");
  const std::vector<CompressEntry> compress_list = compress_entries(path, cfg);
  const KvModePlan plan = kv_plan(path, cfg, compress_list, request);
  const std::vector<CompressStageOptions> compress = compress_options(path, cfg, compress_list, store, "");
  // With several ranks the leader holds the lock for all (and clears killed writers' temporaries) before any
  // rank writes; each stage splits its work over the ranks and only the leader commits (docs/scale.md).
  const Cluster& cluster = Cluster::world();
  std::optional<StoreLock> lock;
  if (cluster.leader()) lock.emplace(StoreLock::acquire(store, wait_lock, true));
  // A store complete before this run (one made before generations existed, say) is published first, so readers
  // keep its tables while the stages below replace the working ones (prep/store_publish.h).
  if (cluster.leader() && has_manifest(store)) publish_store_generation(store);
  cluster.barrier();
  const auto step = [&](const PipelineStep& s) {
    if (cluster.leader()) on_step(s);
  };
  const int threads = cfg.get<int>("", "threads", 0);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            threads > 0 ? threads : tbb::info::default_concurrency());
  const std::string model = resolve_model(model_for_store(cfg.get<std::string>("", "model", ""), store));
  if (!request.only_docs.empty() && !plan.compress.empty())
    fail(path, ": compressed KV modes (", compress_list[plan.compress[0]].to,
         ") are built over the whole store, not for some documents' chunks");

  ChunkStageOptions chunk;
  chunk.corpus = cfg.required("corpus");
  chunk.store_dir = store;
  chunk.model_path = model;
  chunk.chunker.chunk_tokens = cfg.get<size_t>("chunk", "chunk_tokens", 256);
  chunk.chunker.max_tokens = cfg.get<size_t>("chunk", "max_chunk_tokens", 0);
  chunk.keep_removed = cfg.get<bool>("chunk", "keep_removed", false);
  const ChunkStageResult c = run_chunk_stage(chunk);
  step({"chunk", c.unchanged ? "up to date"
                             : std::to_string(c.new_chunks) + " new chunks" +
                                   (c.removed_chunks ? ", " + std::to_string(c.removed_chunks) + " removed" : "")});

  EmbedStageOptions embed;
  embed.store_dir = store;
  embed.embedder_dir = resolve_model(cfg.get<std::string>("", "embedder", "minilm"));
  embed.backend = cfg.get<std::string>("embed", "backend", embed.backend);
  embed.batch_size = cfg.get<int>("embed", "batch", embed.batch_size);
  const EmbedStageResult e = run_embed_stage(embed);
  step({"embed", e.unchanged ? "up to date" : std::to_string(e.embedded) + " chunks embedded"});

  IndexStageOptions index;
  index.store_dir = store;
  index.spec.kind = cfg.get<std::string>("index", "kind", index.spec.kind);
  index.spec.ivf_nlist = cfg.get<int>("index", "ivf_nlist", index.spec.ivf_nlist);
  index.spec.ivf_nprobe = cfg.get<int>("index", "ivf_nprobe", index.spec.ivf_nprobe);
  index.spec.pq_m = cfg.get<int>("index", "pq_m", index.spec.pq_m);
  index.spec.pq_refine = cfg.get<int>("index", "pq_refine", index.spec.pq_refine);
  index.spec.train_sample = cfg.get<int64_t>("index", "train_sample", index.spec.train_sample);
  index.spec.hnsw_m = cfg.get<int>("index", "hnsw_m", index.spec.hnsw_m);
  index.spec.hnsw_ef_construction = cfg.get<int>("index", "hnsw_ef_construction", index.spec.hnsw_ef_construction);
  index.spec.hnsw_ef_search = cfg.get<int>("index", "hnsw_ef_search", index.spec.hnsw_ef_search);
  const IndexStageResult i = run_index_stage(index);
  step({"index", i.unchanged ? "up to date" : std::to_string(i.vectors) + " vectors indexed"});

  NeighborStageOptions neighbors;
  neighbors.store_dir = store;
  neighbors.top_n = cfg.get<int>("neighbors", "top_n", 10);
  const NeighborStageResult n = run_neighbor_stage(neighbors);
  step({"neighbors", n.unchanged ? "up to date" : std::to_string(n.chunks) + " chunks"});

  for (const std::string& mode : plan.prefill) {
    PrefillStageOptions p;  // its defaults stand for keys the YAML leaves out (values checked by load_config)
    p.store_dir = store;
    p.model_path = model;
    p.mode = mode;
    p.top_n = neighbors.top_n;
    p.neighbor_order = neighbor_order_from_name(
        cfg.get<std::string>("prefill", "neighbor_order", neighbor_order_name(p.neighbor_order)));
    p.dtype = parse_kv_dtype(cfg.get<std::string>("prefill", "dtype", kv_dtype_name(p.dtype)), "prefill.dtype");
    p.compute = compute_mode_from_name(cfg.get<std::string>("prefill", "compute", compute_mode_name(p.compute)));
    p.backend = cfg.get<std::string>("prefill", "backend", p.backend);
    p.system_message = cfg.get<std::string>("prefill", "system", p.system_message);
    p.batch_tokens = cfg.get<int>("prefill", "batch_tokens", p.batch_tokens);
    p.shard_bytes = cfg.get<uint64_t>("prefill", "shard_mb", p.shard_bytes >> 20) << 20;
    p.neighbor_cache_bytes = cfg.get<uint64_t>("prefill", "neighbor_cache_mb", p.neighbor_cache_bytes >> 20) << 20;
    p.record_anchor_scores = cfg.get<bool>("prefill", "anchor_scores", p.record_anchor_scores);
    p.refresh_changed_neighbors = cfg.get<bool>("prefill", "refresh_neighbors", p.refresh_changed_neighbors);
    p.only_docs = request.only_docs;
    p.with_similarity_neighbors =
        mode == "independent" && std::count(plan.prefill.begin(), plan.prefill.end(), "similarity") > 0;
    const PrefillStageResult r = run_prefill_stage(p);
    step({"prefill " + mode, (r.unchanged ? "up to date" : std::to_string(r.computed) + " chunks computed") +
                                 (r.stale ? ", " + std::to_string(r.stale) + " stale (their neighbours changed)" : "")});
  }

  for (const size_t i : plan.compress) {
    CompressStageOptions o = compress[i];
    o.model_path = model;
    CompressStageResult r;
    if (cluster.leader()) r = run_compress_stage(o);  // the leader alone, while the others wait
    cluster.barrier();
    step({"compress " + o.to, r.unchanged ? "up to date"
                                             : std::to_string(r.computed) + " chunks, " +
                                                   std::to_string(r.tokens ? r.stored_bytes / r.tokens : 0) +
                                                   " bytes/token"});
  }

  // The prefill and compress stages publish when they complete the store; an update that changed only the index
  // (its settings) is published here.
  if (cluster.leader() && has_manifest(store)) {
    const PublishResult pub = publish_store_generation(store);
    step({"publish", !pub.waiting.empty() ? "waiting: " + pub.waiting
                                          : "readers use generation " + std::to_string(pub.generation)});
    // What no reader reaches any more (removed documents' KV, superseded entries) goes once it is published.
    const PruneResult pruned = prune_store({store, false});
    step({"prune", describe_prune(pruned)});
  }
}

}  // namespace kvf
