#include <cstdio>
#include <memory>

#include "cluster/cluster.h"
#include "common/cli.h"
#include "pipeline/pipeline.h"
#include "run_command.h"
#include "store_lock_option.h"

namespace kvf::cli {
namespace {

// The steps of this process's run, for --json (run_pipeline takes a plain function).
std::vector<PipelineStep>& steps_run() {
  static std::vector<PipelineStep> steps;
  return steps;
}

}  // namespace

void add_run_command(CLI::App& app) {
  struct Args : StoreCommandOptions {  // the store is the pipeline's
    std::string pipeline;
    std::vector<std::string> sets;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Run every stage of a YAML pipeline in order, skipping what is done");
  cmd->footer(
      "Examples:\n"
      "  kvprep run pipelines/demo.yaml\n"
      "  kvprep run pipelines/nightly.yaml --set corpus=/data/today.jsonl --set prefill.modes=[independent]\n"
      "  mpirun -np 4 kvprep run pipelines/nightly.yaml --set threads=4     # 4 ranks (docs/scale.md)\n"
      "  srun --mpi=pmix kvprep run pipelines/nightly.yaml\n"
      "Stages: chunk, embed, index, neighbors, prefill (each mode listed). Keys are documented in the shipped\n"
      "pipelines; an unknown key is an error. Rerunning after a crash or over a grown corpus does only what is new.\n"
      "Under mpirun or srun the ranks share embed, neighbors and prefill (each rank writes its own KV shards on the\n"
      "shared store folder) and rank 0 alone chunks, indexes, compresses and commits the manifest; the store is the\n"
      "one a single process makes. `threads` applies to each rank.");
  cmd->add_option("pipeline", a->pipeline, "pipeline YAML file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sets, "override a setting: key=value (dotted keys, YAML values); repeatable");
  a->add_lock_and_common_options(
      cmd, "one JSON object: pipeline and steps [{name, outcome}] (--threads N is the pipeline's threads)");
  cmd->callback([a, cmd] {
    const StoreCommandScope scope(*a, StoreAccess::Read);  // run_pipeline locks the store once it has read it
    std::vector<std::string> sets = a->sets;
    if (cmd->count("--threads")) sets.push_back("threads=" + std::to_string(a->common.threads));
    if (!a->common.json) {
      run_pipeline(
          a->pipeline, sets,
          [](const PipelineStep& s) { std::printf("%-22s %s\n", s.name.c_str(), s.outcome.c_str()); }, {},
          a->wait_lock);
      return;
    }
    run_pipeline(
        a->pipeline, sets, [](const PipelineStep& s) { steps_run().push_back(s); }, {}, a->wait_lock);
    if (!Cluster::world().leader()) return;  // one object per run, from rank 0
    nlohmann::json steps = nlohmann::json::array();
    for (const PipelineStep& s : steps_run()) steps.push_back({{"name", s.name}, {"outcome", s.outcome}});
    print_json({{"pipeline", a->pipeline}, {"steps", steps}});
  });
}

}  // namespace kvf::cli
