#include "prep/chunk_stage.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "cluster/cluster.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/stopwatch.h"
#include "io/corpus_reader.h"
#include "io/gguf.h"
#include "io/hf_folder.h"
#include "model/fingerprint.h"
#include "model/gguf_tokenizer.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "text/tokenizer.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStage = "chunk";
constexpr size_t kDocumentsPerBatch = 4096;  // enough to keep every core busy tokenizing

// The stage's counts as the manifest records them, and back (for an unchanged rerun).
std::map<std::string, uint64_t> to_counts(const ChunkStageResult& r) {
  return {{"documents", r.documents},
          {"skipped_empty", r.skipped_empty},
          {"chunks", r.chunks},
          {"new_chunks", r.new_chunks},
          {"removed_chunks", r.removed_chunks},
          {"tokens", r.tokens},
          {"max_chunk_tokens", r.max_chunk_tokens},
          {"table_chunks", r.table_chunks},
          {"table_tokens", r.table_tokens}};
}

void from_counts(const std::map<std::string, uint64_t>& counts, const std::string& where, ChunkStageResult& r) {
  const auto get = [&](const char* name) {
    const auto it = counts.find(name);
    KVF_CHECK(it != counts.end(), where, ": the chunk stage record has no count '", name, "'");
    return it->second;
  };
  r.documents = get("documents");
  r.skipped_empty = get("skipped_empty");
  r.chunks = get("chunks");
  r.tokens = get("tokens");
  r.max_chunk_tokens = get("max_chunk_tokens");
  r.table_chunks = get("table_chunks");
  r.table_tokens = get("table_tokens");
}

// The committed chunks.h5 is still the one the manifest recorded (a cheap size check; `verify` hashes).
bool chunks_file_as_recorded(const Manifest& m, const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return false;
  return std::any_of(m.files.begin(), m.files.end(),
                     [&](const CommittedFile& f) { return f.path == kChunksFile && f.bytes == size; });
}

// The store's manifest, or a new one for this model; refuses another model or other chunking settings.
Manifest open_store(const std::string& dir, const gguf::File& model, uint64_t fingerprint,
                    const std::string& model_name, const ChunkerOptions& chunker) {
  Manifest manifest;
  if (has_manifest(dir)) {
    manifest = load_manifest(dir);
    require_same_model(manifest, fingerprint, model_name, dir);
  } else {
    manifest.model_fingerprint = fingerprint;
    manifest.tokenizer_hash = tokenizer_fingerprint(model);
    manifest.model_name = model_name;
  }
  require_settings(manifest, "chunking",
                   {{"chunk_tokens", chunker.chunk_tokens},
                    {"max_tokens", chunker.hard_max()},
                    {"rendering_version", kChunkRenderingVersion}},
                   dir);
  return manifest;
}

// Where the corpus of this run puts each chunk it brings: the first document bringing it, and the chunk's index
// there.
using ChunkPlaces = std::unordered_map<uint64_t, std::pair<std::string, uint32_t>>;

// Tokenizing is the work: a batch of documents in parallel, then its chunks added to the table in corpus order so
// that the table is deterministic.
void add_documents(std::vector<Document>& docs, const ChunkStageOptions& options, const Tokenizer& tokenizer,
                   ChunkTable& table, ChunkPlaces& brought, ChunkStageResult& result, Progress& progress) {
  const Tokenize tokenize = [&](std::string_view text) { return tokenizer.encode(text, false, false); };
  std::vector<std::vector<TextChunk>> pieces(docs.size());
  tbb::parallel_for(size_t(0), docs.size(), [&](size_t d) {
    try {
      pieces[d] = chunk_document(docs[d].title, docs[d].text, options.chunker, tokenize);
    } catch (const Error& e) {
      fail(options.corpus, ": document '", docs[d].id, "': ", e.what());
    }
    progress.advance();
  });
  for (size_t d = 0; d < docs.size(); ++d) {
    const Document& doc = docs[d];
    for (size_t i = 0; i < pieces[d].size(); ++i) {
      TextChunk& piece = pieces[d][i];
      result.tokens += piece.tokens.size();
      result.max_chunk_tokens = std::max<uint64_t>(result.max_chunk_tokens, piece.tokens.size());
      ++result.chunks;
      brought.emplace(chunk_id(piece.tokens, table.model_fingerprint()), std::make_pair(doc.id, (uint32_t)i));
      result.new_chunks += table.add({0, doc.id, doc.title, doc.text.substr(piece.begin, piece.end - piece.begin),
                                      (uint32_t)i, std::move(piece.tokens)});
    }
  }
}

// The table without the chunks no document of the corpus brings, each kept chunk under the first document that
// brings it now, in the table's order (so a store's rows keep their order across edits).
ChunkTable without_removed(const ChunkTable& table, const ChunkPlaces& brought) {
  ChunkTable kept(table.model_fingerprint());
  for (const ChunkRecord& c : table.chunks()) {
    const auto it = brought.find(c.id);
    if (it == brought.end()) continue;
    ChunkRecord record = c;
    record.doc_id = it->second.first;
    record.index_in_doc = it->second.second;
    kept.add(std::move(record));
  }
  return kept;
}

ChunkStageResult chunk_into_store(const ChunkStageOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  options.chunker.check();
  const auto model = open_decoder_file(options.model_path);
  const std::string model_name = fs::path(options.model_path).filename().string();
  ChunkStageResult result;
  result.model_fingerprint = model_fingerprint(*model);
  const std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_gguf(*model);
  const std::string& dir = options.store_dir;
  Manifest manifest = open_store(dir, *model, result.model_fingerprint, model_name, options.chunker);

  const CorpusSummary corpus = scan_corpus(options.corpus);  // checked whole before any work
  const std::string chunks_path = (fs::path(dir) / kChunksFile).string();
  const StageRecord* previous = manifest.find_stage(kStage);
  if (previous && previous->inputs_hash == corpus.content_hash && chunks_file_as_recorded(manifest, chunks_path)) {
    from_counts(previous->counts, manifest_path(dir), result);
    result.unchanged = true;
    result.table_bytes = fs::file_size(chunks_path);
    result.seconds = seconds_since(start);
    return result;
  }

  ChunkTable table = fs::exists(chunks_path) ? ChunkTable::read(chunks_path) : ChunkTable(result.model_fingerprint);
  KVF_CHECK(table.model_fingerprint() == result.model_fingerprint, chunks_path, ": made with model fingerprint ",
            hex64(table.model_fingerprint()), ", but this model (", model_name, ") has ",
            hex64(result.model_fingerprint));
  // The corpus streams past in batches: only the chunk table grows with it.
  Progress progress(kStage, "documents", corpus.documents, options.progress);
  ChunkPlaces brought;
  stream_corpus(options.corpus, kDocumentsPerBatch, [&](std::vector<Document>& docs) {
    add_documents(docs, options, *tokenizer, table, brought, result, progress);
  });
  progress.finish();
  if (!options.keep_removed && table.size() > brought.size()) {
    result.removed_chunks = table.size() - brought.size();
    table = without_removed(table, brought);
  }
  result.documents = corpus.documents + corpus.skipped_empty;
  result.skipped_empty = corpus.skipped_empty;
  result.table_chunks = table.size();
  result.table_tokens = table.n_tokens();

  std::error_code ec;
  fs::create_directories(dir, ec);
  KVF_CHECK(!ec, "store ", dir, ": cannot create the directory: ", ec.message());
  if (result.new_chunks > 0 || result.removed_chunks > 0 || !fs::exists(chunks_path)) {
    PendingFile file(chunks_path);
    table.write(file);
    commit_store_file(dir, manifest, file, kChunksFile);
  } else {
    // Recorded even when unchanged: a file committed by a run killed before its manifest update gets its record.
    manifest.record_file(describe_file(dir, kChunksFile));
  }
  manifest.record_stage({kStage, utc_timestamp(), corpus.content_hash, to_counts(result)});
  save_manifest(dir, manifest);
  result.table_bytes = fs::file_size(chunks_path);
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace

ChunkStageResult run_chunk_stage(const ChunkStageOptions& options) {
  // One chunk table per store: the leader writes it while the other ranks wait, then all read it.
  const Cluster& cluster = Cluster::world();
  ChunkStageResult result;
  if (cluster.leader()) result = chunk_into_store(options);
  cluster.barrier();
  return result;
}

}  // namespace kvf
