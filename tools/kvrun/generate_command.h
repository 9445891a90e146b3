#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvrun generate`: plain prompt -> greedy continuation, with timings.
void add_generate_command(CLI::App& app);
}  // namespace kvf::cli
