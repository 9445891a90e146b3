// Test hook for tests/cli/kill_resume_test.sh, loaded with LD_PRELOAD: SIGKILLs the process at the Nth rename(2)
// call, just before it runs (a temporary complete and synced, not in place) or just after (the file in place,
// its manifest record not yet written). KVF_KILL_AT="before-rename:N" or "after-rename:N"; unset: no effect.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {
std::atomic<int> renames{0};
}  // namespace

extern "C" int rename(const char* from, const char* to) {
  using Rename = int (*)(const char*, const char*);
  static const Rename real = reinterpret_cast<Rename>(dlsym(RTLD_NEXT, "rename"));
  int n = 0;
  bool after = false;
  if (const char* spec = std::getenv("KVF_KILL_AT")) {
    if (std::sscanf(spec, "after-rename:%d", &n) == 1) after = true;
    else if (std::sscanf(spec, "before-rename:%d", &n) != 1) n = 0;
  }
  const bool now = n > 0 && ++renames == n;
  if (now && !after) ::kill(::getpid(), SIGKILL);
  const int rc = real(from, to);
  if (now && after) ::kill(::getpid(), SIGKILL);
  return rc;
}
