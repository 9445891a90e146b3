// A fresh, empty directory for the running test: <gtest temp dir>/kvf_<suite>_<test>.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace kvf::test {

inline std::filesystem::path fresh_test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "kvf_" + std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name)
    if (c == '/') c = '_';  // parameterised tests
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace kvf::test
