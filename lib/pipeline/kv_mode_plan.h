// Which KV modes a pipeline run builds: the modes asked for and every mode they are computed from. similarity
// reads the independent KV (its neighbours' context); a compressed mode reads its compress entry's `from` mode.
#pragma once
#include <set>
#include <string>
#include <vector>

namespace kvf {

struct CompressEntry {
  std::string to, from;
};

// What a caller needs built: the modes (e.g. kvrun eval's --kv; empty: every mode the pipeline file names), and
// for which documents.
struct KvModeRequest {
  std::vector<std::string> modes;
  std::string asked_by;  // names them in errors, e.g. "eval --kv"
  // Non-empty: the prefill stages compute only these corpus documents' chunks and what their similarity KV reads
  // (PrefillStageOptions::only_docs), for a store built as its questions need it. Compressed modes need every chunk.
  std::set<std::string> only_docs;
};

struct KvModePlan {
  std::vector<std::string> prefill;  // in the order they run: independent before similarity
  std::vector<size_t> compress;      // indices into the compress list, in its order
};

// Without requested modes: `prefill_modes` and every compress entry; with them: just those modes, each a prefill
// mode or a compress entry's `to`, and what they read. A compress entry reads a prefill mode or an earlier entry's
// `to`. Throws kvf::Error naming the file (or `asked_by`), the key and the mode otherwise.
KvModePlan plan_kv_modes(const std::string& file, const std::vector<std::string>& prefill_modes,
                         const std::vector<CompressEntry>& compress, const KvModeRequest& request);

}  // namespace kvf
