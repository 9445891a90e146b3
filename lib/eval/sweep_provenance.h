// Where a sweep's results come from, recorded in OUT/sweep.json under "provenance" beside the options a resumed
// sweep must match (eval_sweep.h): the data set file's sha256, the decoder's fingerprint, every option, and per
// run of `kvrun eval` that answered questions the kvfuse build (version, git commit, build type), the compute mode,
// backend, threads, CPU and kernels, the command and the time. docs/eval.md describes the fields.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "eval/eval_sweep.h"

namespace kvf {

// Every option of the sweep, defaults included (sweep.json's top level records some only when they are set).
nlohmann::json eval_options_json(const EvalOptions& options);

// This run: {"started", "kvfuse", "commit", "build_type", "command", "compute_mode", "backend", "threads", "cpu",
// "cpu_features", "kernels", "answered_before", "options"}.
nlohmann::json eval_run_record(const EvalOptions& options, size_t answered_before);

// {"dataset_file", "dataset_sha256", "model_file", "model_fingerprint", "runs": []}: hashes the data set file and
// opens the decoder (the store's own when options.model is empty) to take its fingerprint (model/fingerprint.h).
nlohmann::json sweep_inputs(const EvalOptions& options);

// The recorded inputs a resumed sweep must still read: throws kvf::Error naming `sweep_file`, the field, the
// recorded and the current value when the data set's sha256 or the model's fingerprint differ. A field the
// recorded provenance lacks (a sweep.json from before it was kept) is not compared.
void require_same_inputs(const nlohmann::json& recorded, const nlohmann::json& current, const std::string& sweep_file);

}  // namespace kvf
