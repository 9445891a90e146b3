#include "cluster/rank_gpu.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "cluster/cluster.h"

namespace kvf {

int node_local_rank(const EnvLookup& env) {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* v = env(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long rank = std::strtol(v, &end, 10);
    if (*end == '\0' && rank >= 0 && rank < (1 << 20)) return (int)rank;
  }
  return -1;
}

int count_node_gpus(const std::string& driver_dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(driver_dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    n += it->is_directory(ec);
  return n;
}

RankGpu choose_rank_gpu(int local_rank, const char* cuda_visible, int gpus) {
  RankGpu r;
  if (local_rank < 0) {
    r.why = "the launcher names no node-local rank";
    return r;
  }
  std::vector<std::string> devices;
  if (cuda_visible) {
    std::stringstream list(cuda_visible);
    for (std::string d; std::getline(list, d, ',');)
      if (!d.empty()) devices.push_back(d);
    if (devices.size() <= 1) {
      r.why = devices.empty() ? "CUDA_VISIBLE_DEVICES hides every GPU" : "the launcher gave this rank GPU " + devices[0];
      return r;
    }
  } else {
    for (int g = 0; g < gpus; ++g) devices.push_back(std::to_string(g));
    if (devices.empty()) {
      r.why = "no GPU on this node";
      return r;
    }
  }
  r.bind = true;
  r.visible = devices[(size_t)local_rank % devices.size()];
  r.why = "node-local rank " + std::to_string(local_rank) + " of a node with " + std::to_string(devices.size()) +
          " GPUs uses GPU " + r.visible;
  return r;
}

RankGpu bind_rank_gpu() {
  RankGpu r;
  const char* off = std::getenv("KVF_BIND_GPUS");
  if (launched_world_size() == 1 || (off && std::string(off) == "0")) return r;
  r = choose_rank_gpu(node_local_rank([](const char* name) { return std::getenv(name); }),
                      std::getenv("CUDA_VISIBLE_DEVICES"), count_node_gpus());
  if (r.bind) setenv("CUDA_VISIBLE_DEVICES", r.visible.c_str(), 1);
  return r;
}

}  // namespace kvf
