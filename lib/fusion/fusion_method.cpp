#include "fusion/fusion_method.h"

#include "core/error.h"

namespace kvf {

std::vector<FusionMethod> all_methods() {
  return {FusionMethod::Full, FusionMethod::Reuse, FusionMethod::CacheBlend, FusionMethod::A3, FusionMethod::Fusion};
}

std::string method_name(FusionMethod method) {
  switch (method) {
    case FusionMethod::Full: return "full";
    case FusionMethod::Reuse: return "reuse";
    case FusionMethod::CacheBlend: return "cacheblend";
    case FusionMethod::A3: return "a3";
    case FusionMethod::Fusion: return "fusion";
  }
  return "?";
}

FusionMethod parse_method(const std::string& name) {
  for (FusionMethod m : all_methods())
    if (method_name(m) == name) return m;
  fail("unknown method '", name, "' (expected full, reuse, cacheblend, a3 or fusion)");
}

}  // namespace kvf
