// `--version` of kvprep and kvrun:
//   kvprep 0.1.0 (commit abc1234-dirty, Release build)
//   cpu: <model name> (avx2+fma avx512 ...)
//   kernels: matmul avx512-bf16 (this CPU runs avx512-bf16, avx2-int16, avx2), block dot products avx512-vnni,
//            attention avx512-bf16
// The kernels are those the runtime dispatch picks on this CPU (backend/cpu/cpu_features.h; KVF_GEMM_KERNEL
// overrides the matmul's).
#pragma once
#include <CLI/CLI.hpp>
#include <exception>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "core/build_info.h"

namespace kvf::cli {

inline std::string version_text(const std::string& tool) {
  const BuildInfo& b = build_info();
  const cpu::CpuFeatures& f = cpu::cpu_features();
  std::string text = tool + " " + b.version + " (commit " + b.commit + ", " + b.build_type + " build)\n";
  text += "cpu: " + f.model + " (" + (f.flags().empty() ? "no vector unit kvfuse uses" : f.flags()) + ")\n";
  std::string available;
  for (cpu::GemmKernel k : cpu::available_gemm_kernels())
    available += (available.empty() ? "" : ", ") + std::string(cpu::gemm_kernel_name(k));
  std::string matmul;
  try {
    matmul = cpu::gemm_kernel_name(cpu::active_gemm_kernel());
  } catch (const std::exception& e) {  // no kernel, or KVF_GEMM_KERNEL names one this CPU lacks
    matmul = std::string("none (") + e.what() + ")";
  }
  text += "kernels: matmul " + matmul + " (this CPU runs " + (available.empty() ? "none" : available) +
          "), block dot products " + (f.avx512_vnni ? "avx512-vnni" : f.avx2_fma ? "avx2" : "none") +
          ", attention " + (f.avx512_bf16 ? "avx512-bf16" : f.avx2_fma ? "avx2" : "f32");
  return text;
}

// --version on the tool's top-level command (before any subcommand).
inline void add_version_flag(CLI::App& app, const std::string& tool) {
  app.set_version_flag("--version", [tool] { return version_text(tool); },
                       "print the version, commit, build type and the kernels this CPU runs, and exit");
}

}  // namespace kvf::cli
