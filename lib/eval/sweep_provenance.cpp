#include "eval/sweep_provenance.h"

#include <filesystem>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/sha256.h"
#include "fusion/query_engine.h"
#include "io/hf_folder.h"
#include "io/model_paths.h"
#include "model/fingerprint.h"
#include "model/llama_weights.h"
#include "prep/store_model.h"
#include "store/manifest.h"  // utc_timestamp

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string absolute(const std::string& path) {
  return path.empty() ? path : fs::absolute(path).lexically_normal().string();
}

}  // namespace

json eval_options_json(const EvalOptions& o) {
  std::vector<std::string> methods;
  for (FusionMethod m : o.methods) methods.push_back(method_name(m));
  return {{"dataset", absolute(o.dataset)},
          {"store", absolute(o.store_dir)},
          {"model", o.model},
          {"embedder", o.embedder},
          {"methods", methods},
          {"ratios", o.ratios},
          {"kv", o.kv_modes},
          {"setting", o.setting},
          {"top_k", o.top_k},
          {"best_last", o.best_last},
          {"limit", o.limit},
          {"max_tokens", o.max_tokens},
          {"link_tokens", o.link_tokens},
          {"exact_first_chunk", o.exact_first_chunk},
          {"first_chunk_kv", first_chunk_kv_name(o.first_chunk_kv)},
          {"cache_mb", (double)o.cache_bytes / (1024.0 * 1024.0)},
          {"backend", o.backend},
          {"build_block", o.block},
          {"threads", o.threads},
          {"out", absolute(o.out_dir)}};
}

json eval_run_record(const EvalOptions& o, size_t answered_before) {
  const BuildInfo& b = build_info();
  const cpu::CpuFeatures& f = cpu::cpu_features();
  return {{"started", utc_timestamp()},
          {"kvfuse", b.version},
          {"commit", b.commit},
          {"build_type", b.build_type},
          {"command", o.command},
          {"compute_mode", compute_mode_name(QueryEngineOptions{}.compute)},  // eval's engines take the default
          {"backend", o.backend},
          {"threads", o.threads},
          {"cpu", f.model},
          {"cpu_features", f.flags()},
          {"kernels", cpu::cpu_kernels_report()},
          {"answered_before", answered_before},
          {"options", eval_options_json(o)}};
}

json sweep_inputs(const EvalOptions& o) {
  const std::string model_path = resolve_model(model_for_store(o.model, o.store_dir));
  const uint64_t fingerprint = model_fingerprint(*open_decoder_file(model_path));
  return {{"dataset_file", fs::path(o.dataset).filename().string()},
          {"dataset_sha256", sha256_file(o.dataset)},
          {"model_file", absolute(model_path)},
          {"model_fingerprint", hex64(fingerprint)},
          {"runs", json::array()}};
}

void require_same_inputs(const json& recorded, const json& current, const std::string& sweep_file) {
  for (const auto& [field, what] : {std::pair<const char*, const char*>{"dataset_sha256", "the data set"},
                                    std::pair<const char*, const char*>{"model_fingerprint", "the model"}}) {
    if (!recorded.is_object() || !recorded.contains(field) || !current.contains(field)) continue;
    const json& was = recorded[field];
    const json& now = current[field];
    if (was == now) continue;
    fail(sweep_file, ": provenance.", field, " was ", was.is_string() ? was.get<std::string>() : was.dump(),
         ", now ", now.get<std::string>(), ": ", what, " changed since these results were written (",
         field == std::string("dataset_sha256") ? current.value("dataset_file", "") : current.value("model_file", ""),
         "); choose another --out or pass --fresh to discard them");
  }
}

}  // namespace kvf
