// cpu_usage.h: other processes' CPU time is told apart from this process's own.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "core/cpu_usage.h"

namespace kvf {
namespace {

void spin_for(std::chrono::milliseconds how_long) {
  const auto end = std::chrono::steady_clock::now() + how_long;
  volatile double x = 1.0;
  while (std::chrono::steady_clock::now() < end) x = x * 1.0000001 + 1e-9;
}

TEST(CpuUsage, OwnWorkIsNotCountedAsOthers) {
  const CpuSample before = sample_cpu();
  ASSERT_GE(before.busy_s, 0) << "/proc/stat could not be read";
  spin_for(std::chrono::milliseconds(300));
  const CpuSample after = sample_cpu();
  EXPECT_GT(after.self_s - before.self_s, 0.1) << "the spin is this process's time";
  const double others = others_cpu_share(before, after);
  ASSERT_TRUE(std::isfinite(others));
  EXPECT_GE(others, 0.0);
  EXPECT_LE(others, 1.0);
}

TEST(CpuUsage, ASpinningChildIsCountedAsOthers) {
  const CpuSample before = sample_cpu();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    spin_for(std::chrono::milliseconds(400));
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // this process idle meanwhile
  int status = 0;
  waitpid(child, &status, 0);
  const CpuSample after = sample_cpu();
  const double cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
  // The child kept about one CPU busy; the machine's other work can only add to it.
  EXPECT_GT(others_cpu_share(before, after) * cpus, 0.3);
  EXPECT_LT(after.self_s - before.self_s, 0.2);
}

TEST(CpuUsage, UnreadableSamplesGiveNoShare) {
  CpuSample a = sample_cpu(), b = sample_cpu();
  a.busy_s = -1;
  EXPECT_TRUE(std::isnan(others_cpu_share(a, b)));
}

}  // namespace
}  // namespace kvf
