// Which GPU a rank of a distributed kvprep run uses (docs/scale.md, "GPUs"). Launchers start one rank per GPU and
// every rank sees every GPU of its node, so without binding all ranks of a node would share device 0. Each rank
// keeps one GPU: CUDA_VISIBLE_DEVICES is narrowed, before anything starts CUDA, to the entry its node-local rank
// picks (round robin when there are more ranks than GPUs), so that every thread of the rank sees that GPU as
// device 0. A rank whose launcher already gave it one GPU (Slurm's --gpus-per-task) keeps it.
#pragma once
#include <functional>
#include <string>

namespace kvf {

// Reads an environment variable: nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

// The rank's index among the ranks of its node, from the launcher's environment (Open MPI, MPICH/Hydra, MVAPICH,
// Slurm); -1 when none says.
int node_local_rank(const EnvLookup& env);

// GPUs the NVIDIA driver shows on this machine (one folder each under `driver_dir`), without starting CUDA; 0 when
// there is no driver.
int count_node_gpus(const std::string& driver_dir = "/proc/driver/nvidia/gpus");

struct RankGpu {
  bool bind = false;    // CUDA_VISIBLE_DEVICES is to be set to `visible`
  std::string visible;  // the one device entry this rank keeps
  std::string why;      // for the log line: how it was chosen, or why nothing was
};

// The choice itself. cuda_visible: the inherited CUDA_VISIBLE_DEVICES (nullptr: unset); gpus: count_node_gpus().
RankGpu choose_rank_gpu(int local_rank, const char* cuda_visible, int gpus);

// For a process one of several ranks started (launched_world_size() != 1): chooses and sets CUDA_VISIBLE_DEVICES
// unless KVF_BIND_GPUS=0. Call before anything may start CUDA (kvprep's main does, before MPI_Init). Returns the
// choice, for a line on stderr when a GPU was bound.
RankGpu bind_rank_gpu();

}  // namespace kvf
