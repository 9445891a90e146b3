// What every kvprep command over a store shares: --store, --wait-lock (lib/store/store_lock.h) and the common
// options (--threads, --json, --quiet), and the start of its run: those settings held, then the store's lock taken.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "common/common_options.h"
#include "store/store_lock.h"

namespace kvf::cli {

inline void add_wait_lock_flag(CLI::App* cmd, bool& wait) {
  cmd->add_flag("--wait-lock", wait,
                "wait while another kvprep writes this store (default: exit at once, naming that process)");
}

// A command's Args derive from it: a->store, a->wait_lock, a->common.
struct StoreCommandOptions {
  std::string store;
  bool wait_lock = false;
  CommonOptions common;

  // --store, required; where the command lists it.
  void add_store_option(CLI::App* cmd, const std::string& help) {
    cmd->add_option("--store", store, help)->required();
  }
  // --wait-lock and the common options, the last in the command's list; `json_help` says what --json prints.
  void add_lock_and_common_options(CLI::App* cmd, const std::string& json_help) {
    add_wait_lock_flag(cmd, wait_lock);
    add_common_options(*cmd, common, json_help);
  }
};

enum class StoreAccess {
  Write,   // the store's lock is taken (a missing folder: none, the stage reports it)
  Create,  // the same, the folder created when missing
  Read,    // no lock (a reader, or a command that locks later itself)
};

// Held while a store command runs: its thread and log settings (CommandSettings), then the store's lock, taken
// as StoreLock::acquire takes it (waiting with --wait-lock, else failing at once naming the holder).
class StoreCommandScope {
 public:
  explicit StoreCommandScope(const StoreCommandOptions& options, StoreAccess access = StoreAccess::Write)
      : settings_(options.common) {
    if (access != StoreAccess::Read)
      lock_.emplace(StoreLock::acquire(options.store, options.wait_lock, access == StoreAccess::Create));
  }
  int threads() const { return settings_.threads(); }

 private:
  CommandSettings settings_;
  std::optional<StoreLock> lock_;
};

}  // namespace kvf::cli
