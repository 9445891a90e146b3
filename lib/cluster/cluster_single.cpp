// A build without MPI: every process is a world of one.
#include <cstdio>
#include <cstdlib>

#include "cluster/cluster.h"

namespace kvf {

const Cluster& Cluster::world() { return self(); }

void Cluster::barrier() const {}

std::vector<std::vector<uint8_t>> Cluster::gather(const std::vector<uint8_t>& mine) const { return {mine}; }

std::vector<uint64_t> Cluster::sum_at_leader(std::vector<uint64_t> counts) const { return counts; }

void Cluster::abort(int code) const { std::exit(code); }

bool cluster_support_built() { return false; }

ClusterSession::ClusterSession(int*, char***) {
  if (launched_world_size() == 1) return;
  std::fprintf(stderr,
               "error: this kvprep was built without MPI (cmake -DKVF_MPI=OFF, or no MPI found when it was built) "
               "but an MPI launcher started it as one of several ranks; rebuild with MPI (scripts/setup.sh "
               "installs Open MPI) or run it without mpirun/srun\n");
  std::exit(1);
}
ClusterSession::~ClusterSession() = default;

}  // namespace kvf
