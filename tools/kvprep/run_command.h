#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep run PIPELINE.yaml [--set key=value ...]`.
void add_run_command(CLI::App& app);
}  // namespace kvf::cli
