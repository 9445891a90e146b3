// The kvprep stages after chunking (DESIGN.md §5, steps 2-4): embed every chunk, index the embeddings with FAISS,
// and record each chunk's top-n neighbours. Each reads what the earlier stage committed, writes its file by temp
// + rename, then records itself in the manifest; a rerun does only what is missing or stale.
#pragma once
#include <cstdint>
#include <string>

#include "core/progress.h"
#include "retrieval/vector_index.h"
#include "store/manifest.h"
#include "store/store_files.h"  // the file names inside a store

namespace kvf {

struct EmbedStageOptions {
  std::string store_dir;
  std::string embedder_dir;       // a BERT-family folder (resolve_model(kDefaultEmbedder))
  int batch_size = 32;            // texts per forward pass
  double checkpoint_seconds = 60; // embeddings so far are committed this often: a killed run resumes from them
  std::string backend = "cpu";    // where the encoder runs: cpu | cuda (backend/backend.h)
  ProgressOptions progress;
};

struct EmbedStageResult {
  bool unchanged = false;  // every chunk already had its embedding
  uint64_t chunks = 0;
  uint64_t embedded = 0;   // by this run
  int dim = 0;
  double seconds = 0;
};

EmbedStageResult run_embed_stage(const EmbedStageOptions& options);

struct IndexStageOptions {
  std::string store_dir;
  IndexSpec spec;
};

struct IndexStageResult {
  bool unchanged = false;  // the index already covers the current embeddings with the same settings
  uint64_t vectors = 0;
  double seconds = 0;
};

IndexStageResult run_index_stage(const IndexStageOptions& options);

struct NeighborStageOptions {
  std::string store_dir;
  int top_n = 10;  // FusionRAG §5.3.2
  ProgressOptions progress;
};

struct NeighborStageResult {
  bool unchanged = false;
  uint64_t chunks = 0;
  double mean_score = 0;  // over all recorded neighbours
  double seconds = 0;
};

NeighborStageResult run_neighbor_stage(const NeighborStageOptions& options);

// The index settings a store was built with (its manifest's "index" section), for loading its index.
IndexSpec store_index_spec(const std::string& store_dir);
// The settings of the index a reader opens (reader_table_file): the published generation's, else the store's.
IndexSpec reader_index_spec(const std::string& store_dir, const Manifest& manifest);
// An IndexSpec from a manifest's "index" settings section.
IndexSpec index_spec_of(const nlohmann::json& settings);

}  // namespace kvf
