// Where each key of an attention call lies when the keys are read in place (no staging copy): its K and V rows
// (kv head 0) and its position, in the call's key order. Shared by the CPU attention kernels.
#pragma once
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace kvf::cpu {

struct KeyTable {
  std::vector<const float*> k, v;
  std::vector<int32_t> pos;
  int64_t size() const { return (int64_t)pos.size(); }
};

// The blocks' rows in order (each block's listed rows, or all of them); rows of row_elems floats.
KeyTable key_table(const BlockAttentionArgs& a, int64_t row_elems);
// Rows of one K/V pair, rows of row_elems floats, at the positions k_pos.
KeyTable key_table(const AttentionArgs& a, int64_t row_elems);
// The same keys in position order (stable), so that a pass can stop at a query's last visible key.
KeyTable sorted_by_position(KeyTable t);

// The fast mode's flash kernels (flash_attention.h) share their entry points: one kernel's pass over n query rows
// (q [n, H, D], positions qp) and the keys of `keys` (rows of KV * D floats), writing out [n, H, D].
using FlashPass = void (*)(const float* q, const int32_t* qp, int64_t n, int64_t H, int64_t KV, int64_t D,
                           const KeyTable& keys, float scale, float* out);
// A kernel's pass and what it needs: `available` for the head size on this CPU, else an error naming `needs`.
struct FlashPassOf {
  FlashPass pass;
  bool (*available)(int64_t head_dim);
  const char* needs;
};
// The pass over a call's staged keys (no probe: the f32 kernel computes a probe's exact weights).
void run_flash_pass(const FlashPassOf& kernel, const AttentionArgs& a);
// The pass over the blocks' keys read where they lie, in position order: the keys and their tiles are those of
// the same keys staged and sorted for attention(), so the results are the same bit for bit, without the copy.
void run_flash_pass(const FlashPassOf& kernel, const BlockAttentionArgs& a);
// One task of a flash pass: a block of query rows [r0, r0 + rows) and kv head g, the query heads sharing it
// stacked as lanes h * rows + r (query row r0 + r, head g * group + h), each with its online-softmax state.
struct FlashTask {
  int64_t g = 0, r0 = 0, rows = 0, lanes = 0;
  int32_t q_max = 0;               // the highest position among the rows
  std::vector<float> o, max, sum;  // per lane: unnormalised output [lanes, D], running maximum and sum
  std::vector<int32_t> pos;        // per lane: its row's position
  // Task `task` of a pass over n rows (positions qp) in blocks of block_rows, for every kv head in turn: its
  // rows, their positions, and a fresh state (outputs 0, maxima -inf, sums 0).
  void start(int64_t task, int64_t n, int64_t block_rows, int64_t group, int64_t D, const int32_t* qp);
  // Where a lane's query vector starts in q [n, H, D].
  int64_t q_offset(int64_t lane, int64_t H, int64_t group, int64_t D) const {
    return ((r0 + lane % rows) * H + g * group + lane / rows) * D;
  }
  // out [n, H, D] gets each lane's o / sum, or zeros for a lane that saw no key.
  void write(int64_t H, int64_t group, int64_t D, float* out) const;
};

// Every task of a pass over n rows in blocks of block_rows for KV kv heads, in parallel: body(scratch, task) with
// the task started (FlashTask::start) in a Scratch of the running thread's own (a kernel's working set, holding
// its FlashTask as `task`).
template <class Scratch, class Body>
void for_each_flash_task(int64_t n, int64_t KV, int64_t block_rows, int64_t group, int64_t D, const int32_t* qp,
                         Body&& body) {
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  tbb::enumerable_thread_specific<Scratch> scratch;
  tbb::parallel_for(int64_t{0}, KV * blocks, [&](int64_t task) {
    Scratch& s = scratch.local();
    s.task.start(task, n, block_rows, group, D, qp);
    body(s, s.task);
  });
}

}  // namespace kvf::cpu
