// Which KV modes a pipeline run builds (lib/pipeline/kv_mode_plan.h): the modes asked for and what they read.
#include <gtest/gtest.h>

#include "core/error.h"
#include "pipeline/kv_mode_plan.h"
#include "support/test_values.h"

namespace kvf {
namespace {

using Strings = std::vector<std::string>;
const std::vector<CompressEntry> kCompress = {
    {"sim-a25", "similarity"}, {"sim-a25-q8", "sim-a25"}, {"ind-q8", "independent"}};

KvModePlan plan(const Strings& prefill, const Strings& wanted) {
  return plan_kv_modes("p.yaml", prefill, kCompress, {wanted, "eval --kv", {}});
}

TEST(KvModePlan, WithoutRequestEveryModeTheFileNames) {
  const KvModePlan p = plan({"similarity", "independent"}, {});
  EXPECT_EQ(p.prefill, (Strings{"independent", "similarity"}));
  EXPECT_EQ(p.compress, (std::vector<size_t>{0, 1, 2}));
}

TEST(KvModePlan, SimilarityBringsIndependent) {
  EXPECT_EQ(plan({"similarity"}, {}).prefill, (Strings{"independent", "similarity"}));
  const KvModePlan p = plan({"independent"}, {"similarity"});
  EXPECT_EQ(p.prefill, (Strings{"independent", "similarity"}));
  EXPECT_TRUE(p.compress.empty());
}

TEST(KvModePlan, RequestedModesOnly) {
  const KvModePlan p = plan({"independent", "similarity"}, {"independent"});
  EXPECT_EQ(p.prefill, (Strings{"independent"}));
  EXPECT_TRUE(p.compress.empty());
}

TEST(KvModePlan, CompressedModeBringsItsSources) {
  const KvModePlan p = plan({"independent"}, {"sim-a25-q8"});
  EXPECT_EQ(p.prefill, (Strings{"independent", "similarity"}));
  EXPECT_EQ(p.compress, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(plan({}, {"ind-q8", "independent"}).compress, (std::vector<size_t>{2}));
}

TEST(KvModePlan, UnknownModesAreNamed) {
  EXPECT_NE(test::error_of([] { plan({"bogus"}, {}); }).find("p.yaml: prefill.modes: 'bogus' is not a prefill mode"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { plan({}, {"sim-a50"}); })
                .find("eval --kv: KV mode 'sim-a50' is neither a prefill mode (independent, similarity) nor made by "
                      "the compress list of p.yaml"),
            std::string::npos);
  // A compress entry reads a prefill mode or an earlier entry's result.
  const std::vector<CompressEntry> later = {{"a-q8", "a"}, {"a", "similarity"}};
  EXPECT_NE(test::error_of([&] { plan_kv_modes("p.yaml", {}, later, {}); })
                .find("p.yaml: compress[0].from: 'a' is neither a prefill mode (independent, similarity) nor an "
                      "earlier compress entry's 'to'"),
            std::string::npos);
}

}  // namespace
}  // namespace kvf
