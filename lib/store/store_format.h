// Format versions of the store's files (docs/store.md, "Format versions"). Each file type has one current version,
// which its writer writes. Its reader reads the version once, refuses one newer than it knows (a newer kvfuse
// wrote the file) and brings an older one to the current meaning in one function of its own file; nothing else
// looks for fields by their presence, except fields optional in the current version itself.
//
// A version changes when a writer starts always writing something that older files may lack (or changes what a
// field means). A field whose absence has a meaning of its own (kv shards' anchor_score, the manifest's published)
// is optional within a version, and an older reader that ignores it reads the file correctly.
#pragma once
#include <cstdint>
#include <string>

namespace kvf {

inline constexpr int64_t kManifestFormatVersion = 1;        // manifest.json
inline constexpr int64_t kChunkTableFormatVersion = 1;      // chunks.h5
inline constexpr int64_t kEmbeddingTableFormatVersion = 1;  // embeddings.h5
inline constexpr int64_t kNeighborTableFormatVersion = 1;   // neighbors.h5
// kv/<mode>-NNNNN.h5. 1: index/context may be absent (shards written before similarity KV recorded its neighbour
// context), meaning no context; 2: index/context always present; 3: low-bit shards always record their codec
// (attributes `rotation`, `v_levels`), which versions 1 and 2 never do (the unrotated codec, uniform V levels).
inline constexpr int64_t kKvShardFormatVersion = 3;

// `found`, the version `field` of `file` holds ("attribute 'format_version'"), when this kvfuse reads it
// (1..current); otherwise a kvf::Error naming the file, the field and the version, and for a newer version that a
// newer kvfuse wrote it.
int64_t require_known_version(const std::string& file, const std::string& field, int64_t found, int64_t current);

}  // namespace kvf
