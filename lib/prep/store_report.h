// Whole-store checks and summaries for `kvprep verify` and `kvprep inspect`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvf {

// Recomputes every committed file's size and XXH3 against the manifest, every KV chunk's checksum, and checks
// that the tables agree (ids, row counts, fingerprints). One line per problem; empty when the store is sound.
// Never throws for a damaged store: what cannot be read is itself a problem line.
std::vector<std::string> verify_store(const std::string& store_dir);

// Chunks, tokens, stages, KV modes (chunks, rows, bytes, bytes per token), files and settings.
nlohmann::json inspect_store(const std::string& store_dir);

}  // namespace kvf
