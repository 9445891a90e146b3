#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep prune`: reclaim the KV no reader reaches any more (prep/store_prune.h).
void add_prune_command(CLI::App& app);
}  // namespace kvf::cli
