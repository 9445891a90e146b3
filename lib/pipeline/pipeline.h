// `kvprep run PIPELINE.yaml`: every stage in order, each skipping what is already done (DESIGN.md §5).
//
//   store: stores/demo                 # required
//   corpus: ../shared/data/x.jsonl     # required: JSONL or a folder of .txt files
//   model: smollm2                     # decoder: a preset (smollm2, qwen0.5b, qwen1.5b), GGUF file or HF folder
//   embedder: minilm                   # embedder: minilm or a folder
//   threads: 0                         # 0: all cores
//   chunk:     {chunk_tokens: 256, max_chunk_tokens: 0}
//   index:     {kind: flat}            # flat | ivf | ivfpq | hnsw, with ivf_nlist, ivf_nprobe, pq_m, hnsw_m, ...
//   neighbors: {top_n: 10}
//   prefill:   {modes: [independent, similarity], dtype: f16, system: "", neighbor_order: best-first}
//   compress:  [{to: sim-a25-q8, from: similarity, anchors: 0.25, quant: int8}, ...]   # kvprep compress, in order
//   eval:      {...}                   # kvrun eval's sweep (see docs/eval.md); kvprep ignores it
//
// Overrides: "key=value" with dotted keys ("prefill.modes=[independent]", "store=/tmp/s"); values are YAML.
#pragma once
#include <string>
#include <vector>

#include "pipeline/kv_mode_plan.h"

namespace kvf {

struct PipelineStep {
  std::string name;     // "chunk", "embed", "index", "neighbors", "prefill independent", ...
  std::string outcome;  // one line: what it did or why it did nothing
};

// Loads the file, applies the overrides, validates every key (unknown keys are errors naming the file and key),
// and runs the stages; `on_step` is called after each. The KV stages build the modes `request` names (by default
// every mode the file names: prefill.modes and the compress list) and the modes those are computed from
// (kv_mode_plan.h): similarity brings independent. The store is locked for the whole run (store/store_lock.h;
// `wait_lock`: wait for another writer instead of failing). Throws kvf::Error on bad configuration or a failed stage.
void run_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                  void (*on_step)(const PipelineStep&), const KvModeRequest& request = {}, bool wait_lock = false);

// What run_pipeline checks before its first stage (the file, the overrides, the model, the KV modes), without
// running anything: callers that prepare inputs first fail before any work.
void check_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                    const KvModeRequest& request = {});

}  // namespace kvf
