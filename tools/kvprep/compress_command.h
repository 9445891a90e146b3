#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {
// `kvprep compress`: a new KV mode from a stored one (anchors, layer sharing, int8).
void add_compress_command(CLI::App& app);
// `kvprep share-search`: the KVSharer layer-sharing strategy for a store's model, recorded in the store.
void add_share_search_command(CLI::App& app);
}  // namespace kvf::cli
