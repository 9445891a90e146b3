// Which GPU each rank of a node keeps (cluster/rank_gpu.h): the node-local rank from each launcher's variable,
// round robin over the node's GPUs or over the entries of an inherited CUDA_VISIBLE_DEVICES, a launcher's own
// one-GPU choice kept, and no binding where there is nothing to choose.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "cluster/rank_gpu.h"
#include "support/temp_dir.h"

namespace kvf {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(RankGpu, NodeLocalRankFromEachLauncher) {
  EXPECT_EQ(node_local_rank(env_of({})), -1);
  EXPECT_EQ(node_local_rank(env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}})), 3);
  EXPECT_EQ(node_local_rank(env_of({{"MPI_LOCALRANKID", "1"}})), 1);
  EXPECT_EQ(node_local_rank(env_of({{"MV2_COMM_WORLD_LOCAL_RANK", "2"}})), 2);
  EXPECT_EQ(node_local_rank(env_of({{"SLURM_LOCALID", "5"}})), 5);
  // Open MPI's own variable first (srun inside an allocation also sets SLURM_LOCALID for the srun step).
  EXPECT_EQ(node_local_rank(env_of({{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "7"}})), 7);
  EXPECT_EQ(node_local_rank(env_of({{"SLURM_LOCALID", "x1"}})), -1);
  EXPECT_EQ(node_local_rank(env_of({{"SLURM_LOCALID", "-1"}})), -1);
}

TEST(RankGpu, RoundRobinOverTheNodesGpus) {
  for (int rank = 0; rank < 8; ++rank) {
    const RankGpu r = choose_rank_gpu(rank, nullptr, 4);
    EXPECT_TRUE(r.bind);
    EXPECT_EQ(r.visible, std::to_string(rank % 4)) << rank;
  }
  EXPECT_EQ(choose_rank_gpu(1, nullptr, 4).why, "node-local rank 1 of a node with 4 GPUs uses GPU 1");
}

TEST(RankGpu, AnInheritedListIsSharedOut) {
  EXPECT_EQ(choose_rank_gpu(0, "2,5,GPU-ab12", 8).visible, "2");
  EXPECT_EQ(choose_rank_gpu(1, "2,5,GPU-ab12", 8).visible, "5");
  EXPECT_EQ(choose_rank_gpu(2, "2,5,GPU-ab12", 8).visible, "GPU-ab12");
  EXPECT_EQ(choose_rank_gpu(3, "2,5,GPU-ab12", 8).visible, "2");
}

TEST(RankGpu, NothingToChooseBindsNothing) {
  EXPECT_FALSE(choose_rank_gpu(-1, nullptr, 4).bind);  // no node-local rank
  EXPECT_FALSE(choose_rank_gpu(0, nullptr, 0).bind);   // a CPU node
  const RankGpu given = choose_rank_gpu(3, "6", 8);     // the launcher already gave this rank one GPU
  EXPECT_FALSE(given.bind);
  EXPECT_EQ(given.why, "the launcher gave this rank GPU 6");
  EXPECT_FALSE(choose_rank_gpu(1, "", 8).bind);  // every GPU hidden on purpose
}

TEST(RankGpu, CountsTheDriversGpuFolders) {
  const std::filesystem::path dir = test::fresh_test_dir();
  EXPECT_EQ(count_node_gpus((dir / "missing").string()), 0);
  for (const char* bus : {"0000:17:00.0", "0000:65:00.0", "0000:ca:00.0"})
    std::filesystem::create_directories(dir / bus);
  EXPECT_EQ(count_node_gpus(dir.string()), 3);
}

}  // namespace
}  // namespace kvf
