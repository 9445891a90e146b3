#include <algorithm>
#include <cstdlib>

#include "cluster/cluster.h"
#include "core/error.h"

namespace kvf {

const Cluster& Cluster::self() {
  static const Cluster alone;
  return alone;
}

std::string Cluster::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

int launched_world_size() {
  // Open MPI's mpirun, then PMI (MPICH's launchers, srun --mpi=pmi2); PMIx (srun --mpi=pmix) names no size.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::max(1, std::atoi(v));
  }
  const char* pmix = std::getenv("PMIX_RANK");
  return pmix && *pmix ? 0 : 1;
}

void MessageReader::take(void* out, size_t n) {
  KVF_CHECK(n <= bytes_.size() - at_, "a message between ranks ends early (", bytes_.size(), " bytes, reading ", n,
            " at ", at_, "): are all ranks the same kvprep build?");
  if (n) std::memcpy(out, bytes_.data() + at_, n);
  at_ += n;
}

}  // namespace kvf
