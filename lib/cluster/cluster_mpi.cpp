// Ranks of an MPI job (Open MPI here; any MPI-3 library). Only the leader's receives see other ranks' bytes.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cluster/cluster.h"
#include "core/error.h"

namespace kvf {
namespace {

Cluster& mutable_world() {
  static Cluster world;
  return world;
}

constexpr int kTagSize = 1, kTagBytes = 2;
constexpr size_t kPiece = size_t(1) << 30;  // MPI counts are ints: send at most 1 GiB at a time

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(what, " failed: ", std::string(text, (size_t)len));
}

}  // namespace

const Cluster& Cluster::world() { return mutable_world(); }

void Cluster::barrier() const {
  if (size_ == 1) return;
  // Waiting ranks sleep rather than spin in MPI_Barrier: a leader-only stage (chunk, index, compress) may run
  // for minutes and wants every core of its node.
  MPI_Request request;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
  for (int done = 0;;) {
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<std::vector<uint8_t>> Cluster::gather(const std::vector<uint8_t>& mine) const {
  if (size_ == 1) return {mine};
  if (!leader()) {
    const uint64_t n = mine.size();
    check(MPI_Send(&n, 1, MPI_UINT64_T, 0, kTagSize, MPI_COMM_WORLD), "MPI_Send");
    for (size_t at = 0; at < mine.size(); at += kPiece)
      check(MPI_Send(mine.data() + at, (int)std::min(kPiece, mine.size() - at), MPI_BYTE, 0, kTagBytes,
                     MPI_COMM_WORLD),
            "MPI_Send");
    return {};
  }
  std::vector<std::vector<uint8_t>> all{mine};
  for (int r = 1; r < size_; ++r) {
    uint64_t n = 0;
    check(MPI_Recv(&n, 1, MPI_UINT64_T, r, kTagSize, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    std::vector<uint8_t> bytes((size_t)n);
    for (size_t at = 0; at < bytes.size(); at += kPiece)
      check(MPI_Recv(bytes.data() + at, (int)std::min(kPiece, bytes.size() - at), MPI_BYTE, r, kTagBytes,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
    all.push_back(std::move(bytes));
  }
  return all;
}

std::vector<uint64_t> Cluster::sum_at_leader(std::vector<uint64_t> counts) const {
  if (size_ == 1) return counts;
  std::vector<uint64_t> sums(counts.size(), 0);
  check(MPI_Reduce(counts.data(), sums.data(), (int)counts.size(), MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD),
        "MPI_Reduce");
  return leader() ? sums : counts;
}

void Cluster::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

bool cluster_support_built() { return true; }

ClusterSession::ClusterSession(int* argc, char*** argv) {
  if (launched_world_size() == 1) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(argc, argv) != MPI_SUCCESS) {
    std::fprintf(stderr, "error: MPI_Init failed: cannot join the job mpirun/srun started\n");
    std::exit(1);
  }
  joined_ = true;
  Cluster& w = mutable_world();
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size_);
}

ClusterSession::~ClusterSession() {
  if (joined_) MPI_Finalize();
}

}  // namespace kvf
