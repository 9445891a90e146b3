#include "model/condensed_kv.h"

#include <algorithm>

#include "core/error.h"

namespace kvf {

int CondensedKv::span_first() const {
  for (int l = 0; l < (int)kv_layer.size(); ++l)
    if (kv_layer[(size_t)l] > l) return l;
  return (int)kv_layer.size();
}

int CondensedKv::span_last() const {
  int last = -1;
  for (int l = 0; l < (int)kv_layer.size(); ++l)
    if (kv_layer[(size_t)l] > l) last = std::max(last, kv_layer[(size_t)l]);
  return last;
}

void check_condensed_kv(const CondensedKv& rule, int n_layers, const std::string& where) {
  if (!rule.active()) return;
  KVF_CHECK((int)rule.kv_layer.size() == n_layers, where, ": the KV layer map has ", rule.kv_layer.size(),
            " entries, the model ", n_layers, " layers");
  for (int l = 0; l < n_layers; ++l) {
    const int32_t src = rule.kv_layer[(size_t)l];
    KVF_CHECK(src >= 0 && src < n_layers, where, ": layer ", l, " reads the KV of layer ", src, ", which does not exist");
    KVF_CHECK(rule.kv_layer[(size_t)src] == src, where, ": layer ", l, " reads the KV of layer ", src,
              ", which itself reads layer ", rule.kv_layer[(size_t)src], " (a layer read must compute its own KV)");
  }
  KVF_CHECK(rule.prompt_iterations >= 0, where, ": prompt iterations ", rule.prompt_iterations, " is negative");
}

int condensed_passes(const CondensedKv& rule, int64_t tokens, int requested) {
  if (rule.span_first() > rule.span_last()) return 1;
  const int wanted = requested > 0 ? requested : rule.prompt_iterations;
  const int64_t exact = std::max<int64_t>(tokens, 1);  // beyond one pass per token nothing changes
  return (int)(wanted == 0 ? exact : std::min<int64_t>(wanted, exact));
}

}  // namespace kvf
