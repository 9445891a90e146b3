// What this binary is: the project's version, the git commit it was built from (with "-dirty" when the working
// tree had uncommitted changes to tracked files), and the CMake build type. Recorded with results (kvrun eval) and
// printed by `--version`.
#pragma once
#include <string>

namespace kvf {

struct BuildInfo {
  std::string version;     // "0.1.0" (CMakeLists.txt's project version)
  std::string commit;      // "abc1234", "abc1234-dirty", or "unknown" (built outside a git checkout)
  std::string build_type;  // "Release", "Debug", ...
};

const BuildInfo& build_info();

}  // namespace kvf
