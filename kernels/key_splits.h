// How many parts the tensor-core attention splits a few-row sequence's keys into (flash_attention_splits): plain
// host arithmetic, in a header of its own so that the unit tests check it on machines without CUDA.
#pragma once
#include <cstdint>

namespace kvf::cuda {

// Besides its key tiles, each block loads its Q tile and writes its partial state (then merged): about two key
// tiles' worth of memory traffic.
constexpr int64_t kSplitOverheadTiles = 2;

// The time `blocks` blocks (row tiles x heads) take over `tiles` key tiles cut into `splits`, in key-tile rounds,
// when the GPU holds `slots` blocks at once: the blocks run in waves, each block its split's tiles and overhead.
inline int64_t key_split_rounds(int64_t blocks, int64_t tiles, int64_t slots, int64_t splits) {
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return ceil_div(blocks * splits, slots) * (ceil_div(tiles, splits) + kSplitOverheadTiles);
}

// The split count, from 1 to tiles / min_tiles, with the fewest rounds (the fewest splits among equals: less to
// merge); 1 when the unsplit blocks fill the slots. A count a few blocks past a wave costs a whole second wave.
inline int64_t fastest_key_splits(int64_t blocks, int64_t tiles, int64_t slots, int64_t min_tiles = 8) {
  if (blocks <= 0 || slots <= 0 || blocks >= slots) return 1;
  int64_t best = 1;
  for (int64_t s = 2; s <= tiles / min_tiles; ++s)
    if (key_split_rounds(blocks, tiles, slots, s) < key_split_rounds(blocks, tiles, slots, best)) best = s;
  return best;
}

}  // namespace kvf::cuda
