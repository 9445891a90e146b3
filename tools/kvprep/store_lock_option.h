// --wait-lock for every kvprep command that writes a store (lib/store/store_lock.h).
#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {

inline void add_wait_lock_flag(CLI::App* cmd, bool& wait) {
  cmd->add_flag("--wait-lock", wait,
                "wait while another kvprep writes this store (default: exit at once, naming that process)");
}

}  // namespace kvf::cli
