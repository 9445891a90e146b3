// The tensor-core attention's key splits (kernels/key_splits.h): the count that finishes first, counted in waves
// of resident blocks, never slower than the rule it replaced, and none where the rows alone fill the GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "key_splits.h"

namespace kvf::cuda {
namespace {

TEST(KeySplits, AQuestionOverALongContextFillsOneWave) {
  // 37 rows, 28 heads (28 blocks) over 26,981 keys (422 tiles) on 132 multiprocessors holding 2 blocks each.
  EXPECT_EQ(fastest_key_splits(28, 422, 264), 9);         // 252 blocks: one wave of 47 tiles
  EXPECT_EQ(key_split_rounds(28, 422, 264, 9), 47 + 2);
  EXPECT_EQ(key_split_rounds(28, 422, 264, 10), 2 * (43 + 2));  // the earlier rule: 280 blocks, two waves
}

TEST(KeySplits, NoSplitWhereTheRowsFillTheSlotsOrTheKeysAreFew) {
  EXPECT_EQ(fastest_key_splits(264, 422, 264), 1);
  EXPECT_EQ(fastest_key_splits(1000, 422, 264), 1);
  EXPECT_EQ(fastest_key_splits(28, 15, 264), 1);  // under two splits of 8 tiles
  EXPECT_EQ(fastest_key_splits(0, 422, 264), 1);
  EXPECT_EQ(fastest_key_splits(28, 0, 264), 1);
}

TEST(KeySplits, NeverSlowerThanFillingTheSlotsAndEachSplitHoldsEightTiles) {
  for (int64_t slots : {2, 78, 264, 528})
    for (int64_t blocks = 1; blocks < slots; blocks += 7)
      for (int64_t tiles : {8, 16, 100, 422, 513, 2048}) {
        const int64_t s = fastest_key_splits(blocks, tiles, slots);
        ASSERT_GE(s, 1);
        ASSERT_TRUE(s == 1 || tiles / s >= 8) << blocks << " blocks, " << tiles << " tiles: " << s;
        // The rule it replaced: enough splits for the slots, as many as 8-tile splits allow.
        const int64_t filling = std::max<int64_t>(1, std::min((slots + blocks - 1) / blocks, tiles / 8));
        EXPECT_LE(key_split_rounds(blocks, tiles, slots, s), key_split_rounds(blocks, tiles, slots, filling))
            << blocks << " blocks, " << tiles << " tiles, " << slots << " slots";
        EXPECT_LE(key_split_rounds(blocks, tiles, slots, s), key_split_rounds(blocks, tiles, slots, 1));
      }
}

}  // namespace
}  // namespace kvf::cuda
