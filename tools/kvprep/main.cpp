// kvprep: the offline pipeline CLI. Each stage registers its subcommand here and lives in its own file.
// Started by mpirun or srun, each process is one rank of `kvprep run` (docs/scale.md).
#include <cstdio>
#include <cstring>

#include "cluster/cluster.h"
#include "cluster/rank_gpu.h"
#include "chunk_command.h"
#include "compress_command.h"
#include "common/cli.h"
#include "common/version.h"
#include "prefill_command.h"
#include "prune_command.h"
#include "retrieval_commands.h"
#include "run_command.h"
#include "verify_command.h"

namespace {

// The subcommand named on the command line (the first word that is no option), or "".
const char* subcommand_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // Each rank of a launched job keeps its own GPU; CUDA must not have started yet (it may start with MPI).
  const kvf::RankGpu gpu = kvf::bind_rank_gpu();
  const kvf::ClusterSession session(&argc, &argv);
  if (gpu.bind) std::fprintf(stderr, "%s: %s\n", kvf::Cluster::world().describe().c_str(), gpu.why.c_str());
  const kvf::Cluster& cluster = kvf::Cluster::world();
  if (!cluster.alone() && std::strcmp(subcommand_of(argc, argv), "run") != 0) {
    if (cluster.leader())
      std::fprintf(stderr, "error: kvprep %s runs as one process; under mpirun or srun use `kvprep run PIPELINE.yaml`, "
                   "which splits every stage over the ranks\n", subcommand_of(argc, argv));
    return 2;
  }
  CLI::App app{"kvprep: turn a corpus into a store of precomputed KV caches (kvfuse)"};
  app.require_subcommand(1);
  kvf::cli::add_version_flag(app, "kvprep");
  kvf::cli::add_chunk_command(app);
  kvf::cli::add_embed_command(app);
  kvf::cli::add_index_command(app);
  kvf::cli::add_neighbors_command(app);
  kvf::cli::add_search_command(app);
  kvf::cli::add_prefill_command(app);
  kvf::cli::add_compress_command(app);
  kvf::cli::add_share_search_command(app);
  kvf::cli::add_prune_command(app);
  kvf::cli::add_verify_command(app);
  kvf::cli::add_inspect_command(app);
  kvf::cli::add_run_command(app);
  const int status = kvf::cli::run_app(app, argc, argv, cluster.alone() ? "" : cluster.describe() + ": ");
  if (status != 0 && !cluster.alone()) cluster.abort(status);  // the other ranks may be waiting for this one
  return status;
}
