#include "pipeline/kv_mode_plan.h"

#include <set>

#include "core/error.h"
#include "prep/prefill_stage.h"

namespace kvf {
namespace {

constexpr const char* kPrefillModes[] = {"independent", "similarity"};  // the order they run in
constexpr const char* kPrefillModeList = "a prefill mode (independent, similarity)";

class Planner {
 public:
  explicit Planner(const std::vector<CompressEntry>& compress) : compress_(compress) {}

  void need_prefill(const std::string& mode) {
    prefill_.insert(mode);
    if (mode == "similarity") prefill_.insert("independent");
  }
  // Compress entry i and what it reads: a prefill mode or an earlier entry's `to`.
  void need_compress(size_t i, const std::string& file) {
    if (!compress_used_.insert(i).second) return;
    const std::string& from = compress_[i].from;
    if (is_prefill_mode(from)) return need_prefill(from);
    const size_t source = maker(from, i);
    KVF_CHECK(source < i, file, ": compress[", i, "].from: '", from, "' is neither ", kPrefillModeList,
              " nor an earlier compress entry's 'to'");
    need_compress(source, file);
  }
  // The first of the compress entries [0, end) that makes `mode`; `end` when none does.
  size_t maker(const std::string& mode, size_t end) const {
    for (size_t i = 0; i < end; ++i)
      if (compress_[i].to == mode) return i;
    return end;
  }

  KvModePlan plan() const {
    KvModePlan p;
    for (const char* mode : kPrefillModes)
      if (prefill_.count(mode)) p.prefill.push_back(mode);
    p.compress.assign(compress_used_.begin(), compress_used_.end());
    return p;
  }

 private:
  const std::vector<CompressEntry>& compress_;
  std::set<std::string> prefill_;
  std::set<size_t> compress_used_;
};

}  // namespace

KvModePlan plan_kv_modes(const std::string& file, const std::vector<std::string>& prefill_modes,
                         const std::vector<CompressEntry>& compress, const KvModeRequest& request) {
  Planner planner(compress);
  if (request.modes.empty()) {
    for (const std::string& mode : prefill_modes) {
      KVF_CHECK(is_prefill_mode(mode), file, ": prefill.modes: '", mode, "' is not ", kPrefillModeList);
      planner.need_prefill(mode);
    }
    for (size_t i = 0; i < compress.size(); ++i) planner.need_compress(i, file);
    return planner.plan();
  }
  for (const std::string& mode : request.modes) {
    if (is_prefill_mode(mode)) {
      planner.need_prefill(mode);
      continue;
    }
    const size_t i = planner.maker(mode, compress.size());
    KVF_CHECK(i < compress.size(), request.asked_by, ": KV mode '", mode, "' is neither ", kPrefillModeList,
              " nor made by the compress list of ", file);
    planner.need_compress(i, file);
  }
  return planner.plan();
}

}  // namespace kvf
