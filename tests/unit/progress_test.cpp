// Progress lines: plain periodic lines with rate and ETA, the terminal bar redrawn in place, one summary, silence
// without an output, and many threads advancing one reporter.
#include "core/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace kvf {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Everything written to a temporary FILE*.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) {}
  ~Capture() { std::fclose(file_); }
  std::FILE* file() const { return file_; }
  std::string text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    for (int c; (c = std::fgetc(file_)) != EOF;) out += (char)c;
    return out;
  }

 private:
  std::FILE* file_;
};

ProgressOptions every_call(std::FILE* out, ProgressMode mode) {
  ProgressOptions o;
  o.out = out;
  o.mode = mode;
  o.log_interval_s = 0;
  o.redraw_interval_s = 0;
  return o;
}

TEST(Progress, PlainLinesThenASummary) {
  Capture capture;
  {
    Progress p("chunk", "documents", 4, every_call(capture.file(), ProgressMode::Plain));
    p.advance();
    p.advance(2);
    p.advance();
  }
  const std::string text = capture.text();
  EXPECT_THAT(text, StartsWith("chunk: 1/4 documents (25%), "));
  EXPECT_THAT(text, HasSubstr("\nchunk: 3/4 documents (75%), "));
  EXPECT_THAT(text, HasSubstr(", ETA "));
  EXPECT_THAT(text, HasSubstr("\nchunk: 4 documents in "));
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, SlowItemsShowTheTimeEachTakes) {
  EXPECT_EQ(format_rate(733.4), "733/s");
  EXPECT_EQ(format_rate(2.54), "2.5/s");
  EXPECT_EQ(format_rate(0.1), "0.1/s");
  EXPECT_EQ(format_rate(1 / 37.0), "37 s each");
  EXPECT_EQ(format_rate(1 / 138.0), "2.3 min each");
  EXPECT_EQ(format_rate(0), "0.0/s");  // nothing done yet
}

TEST(Progress, TerminalBarIsRedrawnInPlace) {
  Capture capture;
  Progress p("embed", "chunks", 10, every_call(capture.file(), ProgressMode::Terminal));
  for (int i = 0; i < 5; ++i) p.advance();
  p.finish();
  p.finish();  // only one summary
  const std::string text = capture.text();
  EXPECT_THAT(text, HasSubstr("\rembed [############............] 5/10 chunks (50%)"));
  EXPECT_THAT(text, HasSubstr("\x1b[K"));
  EXPECT_THAT(text, HasSubstr("\rembed: 5/10 chunks in "));  // stopped early: the summary keeps the total
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

TEST(Progress, UnknownTotalShowsCountAndRate) {
  Capture capture;
  Progress p("read", "lines", 0, every_call(capture.file(), ProgressMode::Plain));
  p.advance(7);
  p.finish();
  const std::string text = capture.text();
  EXPECT_THAT(text, StartsWith("read: 7 lines, "));
  EXPECT_EQ(text.find("ETA"), std::string::npos);
}

TEST(Progress, QuietByDefaultIntervalAndSilentWithoutOutput) {
  Capture capture;
  ProgressOptions o;
  o.out = capture.file();
  o.mode = ProgressMode::Plain;
  {
    Progress p("chunk", "documents", 100, o);
    for (int i = 0; i < 100; ++i) p.advance();
  }
  const std::string text = capture.text();
  EXPECT_THAT(text, StartsWith("chunk: 100 documents in "));  // a fast stage prints only its summary
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);

  o.out = nullptr;
  Progress silent("chunk", "documents", 1, o);
  silent.advance();
  silent.finish();
}

TEST(Progress, CountsEveryAdvanceFromManyThreads) {
  Capture capture;
  {
    Progress p("prefill", "chunks", 4000, every_call(capture.file(), ProgressMode::Plain));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) p.advance();
      });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_THAT(capture.text(), HasSubstr("prefill: 4000 chunks in "));
}

}  // namespace
}  // namespace kvf
