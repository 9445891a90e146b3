// The store manifest (manifest.json) and the commit protocol: a data file is written under a temporary name,
// synced and renamed into place, then the manifest that records it is rewritten the same way. A killed run
// leaves the last committed state readable. Layout and fields: docs/store.md.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/durable_file.h"
#include "store/store_format.h"

namespace kvf {

// A store file that cannot be read at all: permission denied, an I/O error of the disk, not a regular file (a
// FIFO, a folder), a path leading out of the store. Its content may be sound, so it is never "damaged" and
// `kvprep verify --repair` leaves it in place (a missing file is damage: its content is gone).
class UnreadableFile : public Error {
 public:
  using Error::Error;
};

inline constexpr const char* kManifestMagic = "kvfuse-store";

// The latest completion of one stage.
struct StageRecord {
  std::string stage;                       // "chunk", later "embed", "index", ...
  std::string completed_at;                // UTC, "2025-01-31T12:00:00Z" (utc_timestamp())
  uint64_t inputs_hash = 0;                // what the stage read, e.g. the corpus' content hash
  std::map<std::string, uint64_t> counts;  // {"documents": 3081, "chunks": 3105, ...}
};

// A data file of the store as committed.
struct CommittedFile {
  std::string path;  // relative to the store directory
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;  // XXH3-64 of the whole file
  // While commit_store_file replaces the file: the version it replaces, which the file on disk may still be.
  bool replacing = false;
  uint64_t previous_bytes = 0, previous_xxh3 = 0;
  // Whether a file of this size and hash is the committed one (or, mid-replacement, the one it replaces).
  bool accepts(uint64_t size, uint64_t hash) const {
    return (size == bytes && hash == xxh3) || (replacing && size == previous_bytes && hash == previous_xxh3);
  }
};

// The generation readers use (docs/store.md, "Generations"): chunks.h5 and index.faiss as they were when every
// chunk the index reaches had its KV in every stored mode, kept under their own names (hard links, recorded in
// files[] too) while the writer replaces the working files. Number 0: none yet; readers use the working files.
struct PublishedGeneration {
  uint64_t number = 0;
  std::string chunks, index;  // store paths of that generation's chunk table and index
  nlohmann::json index_settings;  // settings.index as that index was built
};

// Hashes are written as 16 hex digits (hex64).
struct Manifest {
  uint64_t model_fingerprint = 0;  // model_fingerprint() of the decoder every stored token id and KV row came from
  uint64_t tokenizer_hash = 0;     // tokenizer_fingerprint() of it
  std::string model_name;          // the model file's name, for messages only
  // Settings that shaped the data, one object per stage: {"chunking": {"chunk_tokens": 256, ...}}.
  nlohmann::json settings = nlohmann::json::object();
  std::vector<StageRecord> stages;   // at most one per stage
  std::vector<CommittedFile> files;  // at most one per path
  PublishedGeneration published;    // manifest field 'published', absent while number is 0

  const StageRecord* find_stage(const std::string& stage) const;  // nullptr when the stage never completed
  void record_stage(StageRecord record);                          // replaces the stage's earlier record
  void record_file(CommittedFile file);                           // replaces the path's earlier record
  const CommittedFile* find_file(const std::string& path) const;  // nullptr when the path is not recorded
};

std::string manifest_path(const std::string& store_dir);  // <store_dir>/manifest.json
bool has_manifest(const std::string& store_dir);

// Reads and validates manifest.json: magic, format_version, every field's presence and type. Throws kvf::Error
// naming the file and the field ("stages[1].counts.chunks") with the bad value; a format_version newer than
// kManifestFormatVersion (store/store_format.h) is refused naming it. Optional fields: 'published' and
// files[].previous, whose absence has a meaning of their own (docs/store.md, "Format versions").
Manifest load_manifest(const std::string& store_dir);

// Writes a temporary (io/durable_file.h), syncs it and renames it over manifest.json.
void save_manifest(const std::string& store_dir, const Manifest& manifest);

// Refuses a store made with another model, naming both fingerprints and model names.
void require_same_model(const Manifest& manifest, uint64_t model_fingerprint, const std::string& model_name,
                        const std::string& store_dir);

// Refuses a run whose settings for `section` differ from those the store was built with (naming each differing
// key with both values); records them when the store has none yet.
void require_settings(Manifest& manifest, const std::string& section, const nlohmann::json& wanted,
                      const std::string& store_dir);

// Commits a finished temporary (written, closed) as <store_dir>/<relative_path> with its manifest record, so
// that at every moment the manifest accepts the file on disk: a new file is renamed, then recorded; a file that
// replaces another is first recorded with the old version still accepted, then renamed, then recorded alone.
// Saves the manifest.
void commit_store_file(const std::string& store_dir, Manifest& manifest, PendingFile& file,
                       const std::string& relative_path);

// Size and XXH3-64 of <store_dir>/<relative_path>, for the manifest's file records (store_file_path's checks).
// A file that cannot be opened or read is an UnreadableFile error.
CommittedFile describe_file(const std::string& store_dir, const std::string& relative_path);
// Throws UnreadableFile unless <store_dir>/<relative_path> can be opened for reading (store_file_path's checks
// first): what a whole-store check asks before it blames a file's content for a failed read.
void require_readable(const std::string& store_dir, const std::string& relative_path);

// Refuses a store path that is not plain and relative: empty, absolute, or with an empty, "." or ".." component.
// `where` names the field ("<store>/manifest.json: field 'files[3].path'").
void require_relative_store_path(const std::string& relative_path, const std::string& where);
// <store_dir>/<relative_path> once it is known to stay inside the store and to name a regular file: a symlink
// leading out of the store, a FIFO, a device or a directory is an UnreadableFile error naming the path (checked by
// stat, never by opening, so a FIFO cannot hang the reader); a missing file a kvf::Error.
std::string store_file_path(const std::string& store_dir, const std::string& relative_path);

// <store_dir>/<relative_path> once its size and XXH3 are those the manifest records (or, mid-replacement, those of
// the version it replaces): what a reader of a whole table (chunks.h5, index.faiss) calls before trusting it. A
// file the manifest does not list, or one that differs, is a kvf::Error naming the file, both hashes and the
// repair command.
std::string checked_store_file(const std::string& store_dir, const Manifest& manifest,
                               const std::string& relative_path);

// What a reader opens for a whole table (`table`: chunks.h5 or index.faiss): the published generation's file when
// the manifest publishes one whose record it holds, else the working file; checked as checked_store_file does.
// A manifest and the files it names are one commit: a reader reads the manifest once and opens only these.
std::string reader_table_file(const std::string& store_dir, const Manifest& manifest, const std::string& table);

// Whether two loads of a manifest are the same commit (the same files, stages and publication): a reader whose
// open failed retries with a newer manifest, and reports the failure when the manifest has not changed.
bool same_commit(const Manifest& a, const Manifest& b);

std::string utc_timestamp();  // now, as "2025-01-31T12:00:00Z"

}  // namespace kvf
