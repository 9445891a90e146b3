// `kvprep run PIPELINE.yaml`: every stage in order, each skipping what is already done (DESIGN.md §5).
//
//   store: stores/demo                 # required
//   corpus: ../shared/data/x.jsonl     # required: JSONL or a folder of .txt files
//   model: smollm2                     # decoder (name or GGUF path)
//   embedder: minilm                   # embedder (name or folder)
//   threads: 0                         # 0: all cores
//   chunk:     {chunk_tokens: 256, max_chunk_tokens: 0}
//   index:     {kind: flat}            # flat | ivf | hnsw, with ivf_nlist, ivf_nprobe, hnsw_m, ...
//   neighbors: {top_n: 10}
//   prefill:   {modes: [independent, similarity], dtype: f16, system: ""}
//   compress:  [{to: sim-a25-q8, from: similarity, anchors: 0.25, quant: int8}, ...]   # kvprep compress, in order
//   eval:      {...}                   # kvrun eval's sweep (see docs/eval.md); kvprep ignores it
//
// Overrides: "key=value" with dotted keys ("prefill.modes=[independent]", "store=/tmp/s"); values are YAML.
#pragma once
#include <string>
#include <vector>

namespace kvf {

struct PipelineStep {
  std::string name;     // "chunk", "embed", "index", "neighbors", "prefill independent", ...
  std::string outcome;  // one line: what it did or why it did nothing
};

// Loads the file, applies the overrides, validates every key (unknown keys are errors naming the file and key),
// and runs the stages; `on_step` is called after each. Throws kvf::Error on bad configuration or a failed stage.
void run_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                  void (*on_step)(const PipelineStep&));

}  // namespace kvf
