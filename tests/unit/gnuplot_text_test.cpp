// eval/gnuplot_text: text from data enters a gnuplot script only as one single-quoted literal.
#include "eval/gnuplot_text.h"

#include <gtest/gtest.h>

namespace kvf {
namespace {

TEST(GnuplotText, QuotesAreDoubledAndLineBreaksRemoved) {
  EXPECT_EQ(gnuplot_quoted("hotpotqa.jsonl: F1"), "'hotpotqa.jsonl: F1'");
  EXPECT_EQ(gnuplot_quoted("t';system(\"touch X\");#"), "'t'';system(\"touch X\");#'");
  EXPECT_EQ(gnuplot_quoted("a\nsystem('x')\r"), "'a system(''x'') '");
  EXPECT_EQ(gnuplot_quoted(std::string("a\0b", 3)), "'a b'");
  EXPECT_EQ(gnuplot_quoted(""), "''");
}

// Whatever the text, the literal is one token: it starts and ends with a quote and every inner quote is doubled.
TEST(GnuplotText, EveryByteStaysInsideTheLiteral) {
  std::string all;
  for (int c = 1; c < 256; ++c) all += (char)c;
  const std::string q = gnuplot_quoted(all + "'" + all);
  ASSERT_GE(q.size(), 2u);
  EXPECT_EQ(q.front(), '\'');
  EXPECT_EQ(q.back(), '\'');
  const std::string inner = q.substr(1, q.size() - 2);
  for (size_t i = 0; i < inner.size(); ++i) {
    EXPECT_GE((unsigned char)inner[i], 0x20) << i;
    if (inner[i] == '\'') {
      ASSERT_LT(i + 1, inner.size());
      EXPECT_EQ(inner[i + 1], '\'');
      ++i;
    }
  }
}

}  // namespace
}  // namespace kvf
