// The query-time methods kvrun compares (DESIGN.md §6), by name.
#pragma once
#include <string>
#include <vector>

namespace kvf {

enum class FusionMethod {
  Full,        // plain prefill of the whole prompt: the quality reference
  Reuse,       // stored chunk KV at the prompt's positions, only the question computed (Full Reuse)
  CacheBlend,  // recompute the tokens whose layer-1 V deviates most from the stored V (LCKV: its lowest own-KV layer)
  A3,          // recompute the tokens the question attends to most at layer 1 (LCKV: as cacheblend)
  Fusion,      // recompute the tokens the question attends to most at the last layer over the stored KV
};

std::string method_name(FusionMethod method);
// Throws kvf::Error naming the value and the accepted names.
FusionMethod parse_method(const std::string& name);
std::vector<FusionMethod> all_methods();

}  // namespace kvf
