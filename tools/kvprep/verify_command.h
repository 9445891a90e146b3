#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep verify` and `kvprep inspect`: check and summarise a store.
void add_verify_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
}  // namespace kvf::cli
