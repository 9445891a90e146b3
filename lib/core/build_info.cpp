#include "core/build_info.h"

#include "kvf_build_commit.h"  // KVF_GIT_COMMIT, rewritten by every build when the commit changes

#ifndef KVF_VERSION
#define KVF_VERSION "unknown"
#endif
#ifndef KVF_BUILD_TYPE
#define KVF_BUILD_TYPE "unknown"
#endif

namespace kvf {

const BuildInfo& build_info() {
  static const BuildInfo info{KVF_VERSION, KVF_GIT_COMMIT, *KVF_BUILD_TYPE ? KVF_BUILD_TYPE : "unspecified"};
  return info;
}

}  // namespace kvf
