// `--version` of kvprep and kvrun:
//   kvprep 0.1.0 (commit abc1234-dirty, Release build)
//   cpu: <model name> (avx2+fma avx512 ...)
//   kernels: matmul avx512-bf16 (this CPU runs avx512-bf16, avx2-int16, avx2), block dot products avx512-vnni,
//            attention avx512-bf16
// The kernels are the kernel table's (backend/cpu/cpu_kernels.h: this CPU's best, or what KVF_GEMM_KERNEL names).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/cpu_kernels.h"
#include "core/build_info.h"

namespace kvf::cli {

inline std::string version_text(const std::string& tool) {
  const BuildInfo& b = build_info();
  const cpu::CpuFeatures& f = cpu::cpu_features();
  std::string text = tool + " " + b.version + " (commit " + b.commit + ", " + b.build_type + " build)\n";
  text += "cpu: " + f.model + " (" + (f.flags().empty() ? "no vector unit kvfuse uses" : f.flags()) + ")\n";
  text += "kernels: " + cpu::cpu_kernels_report();
  return text;
}

// --version on the tool's top-level command (before any subcommand).
inline void add_version_flag(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", [tool] { return version_text(tool); },
                       "print the version, commit, build type and the kernels this CPU runs, and exit");
}

}  // namespace kvf::cli
