// Which files a store folder holds, and so which ones a writer may create, replace or delete there
// (docs/store.md, "What a writer may touch"). A writer writes only into a store, an empty folder or a new one, and
// removes only temporaries of its own form (<name>.<pid>.tmp, <name> a store file) whose writer is gone.
#pragma once
#include <cstdint>
#include <string>

namespace kvf {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kStoreLockFile = "kvprep.lock";  // created by the first writer, before any data
inline constexpr const char* kEmbeddingsFile = "embeddings.h5";
inline constexpr const char* kIndexFile = "index.faiss";
inline constexpr const char* kNeighborsFile = "neighbors.h5";
inline constexpr const char* kKvFolder = "kv";

// Whether `relative` ('/'-separated, inside the store) is a file a store writer commits: manifest.json,
// chunks.h5, embeddings.h5, index.faiss, neighbors.h5, kv/<mode>-NNNNN.h5, or a published generation's
// chunks.<g>.h5 or index.<g>.faiss.
bool is_store_data_name(const std::string& relative);

// Generations readers pin (docs/store.md, "Generations"): chunks.h5 and index.faiss as published, hard links
// named "chunks.<g>.h5" and "index.<g>.faiss" with g written in five or more digits.
std::string generation_file_name(const std::string& table, uint64_t generation);  // table: chunks.h5 or index.faiss
// The generation of such a name (0 when `relative` is none).
uint64_t generation_of_file(const std::string& relative);

// Whether `relative` is a temporary one of those was written under: "<name>.<pid>.tmp" (io/durable_file.h).
bool is_store_temporary(const std::string& relative);

// Refuses (kvf::Error naming the folder and what it holds) to write a store into an existing folder that is
// neither a store nor a store under construction (it holds manifest.json or kvprep.lock) nor empty, nor holds
// only names a store writer or `kvrun eval --build-store` puts there. A missing folder is fine.
void require_store_folder(const std::string& store_dir);

// Removes the temporaries of writers that are gone: in the store and kv/, names for which is_store_temporary
// holds whose pid is neither this process nor a live process of this machine. Anything else stays, whatever its
// name. The caller holds the store lock, so no writer of this store is running.
void remove_stale_temporaries(const std::string& store_dir);

}  // namespace kvf
