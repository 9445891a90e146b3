// Whole-store checks and summaries for `kvprep verify` and `kvprep inspect`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvf {

// Damaged: the file's content is wrong (size, hash, checksum, a non-finite value, structure) or the file is gone;
// `verify --repair` drops it. Unreadable: the file could not be read at all (permission denied, an I/O error,
// not a regular file, a path leading out of the store, store/manifest.h UnreadableFile): its content may be
// sound, so nothing is dropped and the owner must make it readable.
enum class ProblemKind { Damaged, Unreadable };
const char* problem_kind_name(ProblemKind kind);  // "damaged", "unreadable"

// One problem verify found, and the committed file it concerns ("" when it is the store as a whole, e.g. an
// unreadable manifest).
struct StoreProblem {
  std::string file;  // as the manifest records it: "kv/independent-00001.h5", "embeddings.h5"
  std::string what;  // one line naming the file and the fault
  ProblemKind kind = ProblemKind::Damaged;
};

// Recomputes every committed file's size and XXH3 against the manifest, every KV chunk's checksum (and that its
// values are finite), and checks that the tables agree (ids, fingerprints). Empty when the store is sound.
// Never throws for a damaged store: what cannot be read is itself a problem. A file found unreadable is not
// read again by the later checks, whose failures would otherwise blame its content.
std::vector<StoreProblem> verify_store(const std::string& store_dir);

// Store data on disk that the manifest does not list (under kv/, and *.h5 / *.faiss at the top): left by a run
// killed between a file's rename and its manifest update (the next run of its stage replaces it), or put there
// by hand. Nothing reads them. Temporaries, the lock file and the manifest are not data.
std::vector<std::string> unlisted_store_files(const std::string& store_dir);

// The prefill stages a limited run left incomplete (PrefillStageOptions::only_docs, as kvrun eval builds a store):
// one line each naming the stage, the chunks still without KV and the command that completes it. Such a store is
// sound, not complete; empty when every stage covers every chunk.
std::vector<std::string> incomplete_stages(const std::string& store_dir);

// Chunks, tokens, stages, KV modes (chunks, rows, bytes, bytes per token), files and settings.
nlohmann::json inspect_store(const std::string& store_dir);

}  // namespace kvf
