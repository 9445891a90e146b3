// The `chunk` stage of kvprep: corpus -> chunks.h5 and the manifest of a store. A rerun over the same corpus does
// nothing; a rerun over a changed corpus adds only the chunks the store does not hold yet and drops those that no
// document brings any more (unless keep_removed).
#pragma once
#include <cstdint>
#include <string>

#include "core/progress.h"
#include "text/chunker.h"

namespace kvf {

struct ChunkStageOptions {
  std::string corpus;      // JSONL file or directory of .txt files (read_corpus)
  std::string store_dir;   // created when missing
  std::string model_path;  // the decoder's GGUF: tokenizer and fingerprint
  ChunkerOptions chunker;
  // The corpus is the whole collection: chunks that none of its documents bring any more (documents removed or
  // edited) leave the chunk table, and the later stages drop their embeddings, neighbours and KV. true: the
  // corpus only adds to the store (a feed of new documents); nothing leaves it.
  bool keep_removed = false;
  ProgressOptions progress;
};

struct ChunkStageResult {
  bool unchanged = false;  // the store was already chunked from this very corpus: nothing was done
  uint64_t model_fingerprint = 0;
  // About the corpus of this run (from the manifest when unchanged).
  uint64_t documents = 0;
  uint64_t skipped_empty = 0;
  uint64_t chunks = 0;      // chunks its documents make, whether new or already stored
  uint64_t new_chunks = 0;  // added to the store by this run
  uint64_t removed_chunks = 0;  // dropped from the store by this run: no document of the corpus brings them
  uint64_t tokens = 0;      // over `chunks`
  uint64_t max_chunk_tokens = 0;
  // The store's chunk table after the run.
  uint64_t table_chunks = 0;
  uint64_t table_tokens = 0;
  uint64_t table_bytes = 0;  // size of chunks.h5
  double seconds = 0;
};

// Tokenizes on all cores TBB allows (tbb::global_control limits them); HDF5 stays on the calling thread.
// Throws kvf::Error for a bad corpus, a store of another model, or chunking settings that differ from the store's.
ChunkStageResult run_chunk_stage(const ChunkStageOptions& options);

}  // namespace kvf
