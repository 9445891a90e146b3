// The ranks of a distributed kvprep run (docs/scale.md). A process started by an MPI launcher (mpirun, srun)
// is one rank of the job's world; any other process is a world of one, and a build without MPI only ever has
// that. Stages split their work by rank and send results to rank 0, the only rank that writes the manifest.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/progress.h"

namespace kvf {

class Cluster {
 public:
  // The world this process belongs to (a world of one until a ClusterSession joined a launched job).
  static const Cluster& world();
  // This process alone, whatever the world: for work one rank does by itself (it never waits for others).
  static const Cluster& self();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool leader() const { return rank_ == 0; }
  bool alone() const { return size_ == 1; }
  // "rank 1 of 4", for messages.
  std::string describe() const;

  void barrier() const;
  // Every rank's bytes at the leader, in rank order (the leader's own first); other ranks get an empty list.
  // Any size: large messages travel in pieces.
  std::vector<std::vector<uint8_t>> gather(const std::vector<uint8_t>& mine) const;
  // Element-wise sums of every rank's counts at the leader (other ranks get their own counts back).
  std::vector<uint64_t> sum_at_leader(std::vector<uint64_t> counts) const;
  // Ends the whole job with `code` (a rank that fails must not leave the others waiting in a collective).
  [[noreturn]] void abort(int code) const;

 private:
  friend class ClusterSession;
  int rank_ = 0;
  int size_ = 1;
};

// Joins the launched job for the lifetime of the object (MPI_Init / MPI_Finalize) when the environment shows an
// MPI launcher started this process; otherwise does nothing. A build without MPI launched as one of several
// ranks exits with status 1 and says so: its ranks would each write the whole store. One per process.
class ClusterSession {
 public:
  ClusterSession(int* argc, char*** argv);
  ~ClusterSession();
  ClusterSession(const ClusterSession&) = delete;
  ClusterSession& operator=(const ClusterSession&) = delete;

 private:
  bool joined_ = false;
};

// Whether this build can join MPI jobs (KVF_MPI).
bool cluster_support_built();
// The world size an MPI launcher announced in the environment (Open MPI's mpirun, PMI): 1 when no launcher
// started this process, 0 when one did without naming the size (PMIx, as srun --mpi=pmix).
int launched_world_size();

// Progress of a distributed stage is reported by the leader alone (it counts every rank's work).
inline ProgressOptions leader_progress(ProgressOptions options) {
  if (!Cluster::world().leader()) options.out = nullptr;
  return options;
}

// Flat messages of trivially copyable values for gather().
class MessageWriter {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put_vector(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(values.size());
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    bytes_.insert(bytes_.end(), p, p + values.size() * sizeof(T));
  }
  void put_string(const std::string& s) { put_vector(std::vector<char>(s.begin(), s.end())); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class MessageReader {
 public:
  explicit MessageReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T value;
    take(&value, sizeof(T));
    return value;
  }
  template <typename T>
  std::vector<T> get_vector() {
    std::vector<T> values((size_t)get<uint64_t>());
    take(values.data(), values.size() * sizeof(T));
    return values;
  }
  std::string get_string() {
    const std::vector<char> c = get_vector<char>();
    return std::string(c.begin(), c.end());
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* out, size_t n);  // throws kvf::Error past the end (a message from another build)
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

// Work units [0, units) in rounds of `per_round` units; unit u belongs to rank u % size. `work(u)` runs for this
// rank's units of a round, then `round_end(round, last)` on every rank (a collective point: gather there).
template <typename Work, typename RoundEnd>
void run_in_rounds(const Cluster& cluster, size_t units, size_t per_round, Work&& work, RoundEnd&& round_end) {
  if (per_round == 0) per_round = 1;
  const size_t rounds = (units + per_round - 1) / per_round;
  for (size_t r = 0; r < rounds; ++r) {
    const size_t end = std::min(units, (r + 1) * per_round);
    for (size_t u = r * per_round; u < end; ++u)
      if ((int)(u % (size_t)cluster.size()) == cluster.rank()) work(u);
    round_end(r, r + 1 == rounds);
  }
}

}  // namespace kvf
