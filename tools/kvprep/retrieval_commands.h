#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep embed`, `index`, `neighbors` (the stages after chunk) and `search` (inspect a store).
void add_embed_command(CLI::App& app);
void add_index_command(CLI::App& app);
void add_neighbors_command(CLI::App& app);
void add_search_command(CLI::App& app);
}  // namespace kvf::cli
