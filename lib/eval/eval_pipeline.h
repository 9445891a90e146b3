// A pipeline file's eval section (pipelines/paper-*.yaml): the sweep `kvrun eval --pipeline FILE` runs over the
// store the same file builds. Command-line options win over the file.
#pragma once
#include <set>
#include <string>

#include "eval/eval_sweep.h"

namespace kvf {

// Where benchmark data sets live: $KVFUSE_DATA; else $KVFUSE_HOME/data (~/.cache/kvfuse/data, filled by `make data`)
// where that folder exists; else ../shared/data.
std::string data_dir();
// A data set path as given, or a bare file name looked up in data_dir().
std::string resolve_dataset(const std::string& name);

// A name for a model in folder names: a preset's name, a GGUF file's stem, a folder's name ("Mistral-7B-Instruct-v0.2"),
// with characters other than letters, digits, '.', '-' and '_' as '-'.
std::string model_tag(const std::string& model);

// Fills `o` from the file's store, model, embedder and eval keys, except the option names in `given`
// ("dataset", "limit", "setting", "methods", "ratios", "kv", "max_tokens", "top_k", "link_tokens", "out",
// "reference_kv", "store", "model"). A given model other than the file's gets the file's store and out folders suffixed with
// "-" + model_tag(model) (unless given too), so another model's sweep neither reads the file's store nor resumes
// its results. Throws kvf::Error naming the file and key for unknown keys and bad values.
void apply_eval_pipeline(const std::string& path, const std::set<std::string>& given, EvalOptions& o);

}  // namespace kvf
