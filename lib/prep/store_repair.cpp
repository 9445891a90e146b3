#include "prep/store_repair.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "prep/retrieval_stages.h"
#include "prep/store_report.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/manifest.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// The stage whose record says `file` is current, and the command that writes it again.
RepairedFile owner_of(const Manifest& m, const std::string& file) {
  const std::string mode = kv_mode_of_shard(file);
  if (mode == kSystemKvMode) return {file, "", "kvprep prefill (any mode computes S again)"};
  if (!mode.empty()) {
    if (m.find_stage("compress-" + mode)) return {file, "compress-" + mode, "kvprep compress --to " + mode + " ..."};
    return {file, "prefill-" + mode, "kvprep prefill --mode " + mode};
  }
  if (file == kChunksFile) return {file, "chunk", "kvprep chunk"};
  if (file == kEmbeddingsFile) return {file, "embed", "kvprep embed"};
  if (file == kIndexFile) return {file, "index", "kvprep index"};
  if (file == kNeighborsFile) return {file, "neighbors", "kvprep neighbors"};
  return {file, "", "the stage that wrote it"};
}

}  // namespace

RepairResult repair_store(const std::string& dir) {
  Manifest m = load_manifest(dir);  // an unreadable manifest leaves nothing to repair from
  RepairResult result;
  std::set<std::string> damaged, unreadable;
  for (StoreProblem& p : verify_store(dir)) {
    if (p.file.empty()) continue;
    if (p.kind == ProblemKind::Unreadable) {
      unreadable.insert(p.file);
      result.unreadable.push_back(std::move(p));
    } else {
      damaged.insert(p.file);
    }
  }
  for (const std::string& file : damaged) {
    if (unreadable.count(file)) continue;  // a file that cannot be read is not known to be broken
    RepairedFile r = owner_of(m, file);
    if (!m.find_stage(r.stage)) r.stage.clear();
    m.files.erase(std::remove_if(m.files.begin(), m.files.end(), [&](const CommittedFile& f) { return f.path == file; }),
                  m.files.end());
    if (!r.stage.empty())
      m.stages.erase(std::remove_if(m.stages.begin(), m.stages.end(),
                                    [&](const StageRecord& s) { return s.stage == r.stage; }),
                     m.stages.end());
    result.dropped.push_back(std::move(r));
  }
  if (result.dropped.empty()) return result;
  save_manifest(dir, m);  // committed first: a kill now leaves broken files no manifest names
  for (const RepairedFile& r : result.dropped) {
    std::error_code ec;
    // Stages read an existing table to extend it: a damaged one must go, not just leave the manifest.
    fs::remove(fs::path(dir) / r.file, ec);
  }
  return result;
}

}  // namespace kvf
