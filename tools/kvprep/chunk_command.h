#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep chunk`: corpus -> chunks.h5 and manifest.json of a store.
void add_chunk_command(CLI::App& app);
}  // namespace kvf::cli
