#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep prefill`: every chunk's KV, independent or similarity mode.
void add_prefill_command(CLI::App& app);
}  // namespace kvf::cli
