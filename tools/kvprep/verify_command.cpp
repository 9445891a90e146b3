#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "common/common_options.h"
#include "prep/store_repair.h"
#include "prep/store_report.h"
#include "store_lock_option.h"
#include "verify_command.h"

namespace kvf::cli {

void add_verify_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    bool repair = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("verify", "Check every file, checksum and table of a store (exit 1 on damage)");
  cmd->footer(
      "Examples:\n  kvprep verify --store stores/demo\n  kvprep verify --store stores/demo --repair\n"
      "--repair drops damaged files from the manifest (and the disk) with their stages' records, and names the\n"
      "commands that recompute exactly that; it writes the store, so it takes the store lock. A file that cannot be\n"
      "read (permission denied, an I/O error) is reported as unreadable, never dropped, and --repair exits 1.");
  a->add_store_option(cmd, "store directory");
  cmd->add_flag("--repair", a->repair, "drop broken files from the manifest so the next stage runs recompute them");
  a->add_lock_and_common_options(
      cmd,
      "one JSON object: store, ok, problems [{kind, what}], unlisted_files, notes (--repair: dropped [{file, stage, "
      "rerun}], unreadable); printed before the error line of a store that fails");
  cmd->callback([a] {
    // --repair writes the store, so it takes the lock; a check only reads it.
    const StoreCommandScope scope(*a, a->repair ? StoreAccess::Write : StoreAccess::Read);
    if (a->repair) {
      const RepairResult r = repair_store(a->store);
      if (a->common.json) {
        nlohmann::json out = {{"store", a->store}, {"dropped", nlohmann::json::array()},
                              {"unreadable", nlohmann::json::array()}};
        for (const RepairedFile& d : r.dropped)
          out["dropped"].push_back({{"file", d.file}, {"stage", d.stage}, {"rerun", d.rerun}});
        for (const StoreProblem& p : r.unreadable) out["unreadable"].push_back(p.what);
        print_json(out);
      } else {
        for (const RepairedFile& d : r.dropped)
          std::printf("dropped: %s%s; rerun: %s\n", d.file.c_str(),
                      d.stage.empty() ? "" : (" and the record of stage " + d.stage).c_str(), d.rerun.c_str());
        for (const StoreProblem& p : r.unreadable) std::printf("kept: unreadable: %s\n", p.what.c_str());
        std::printf("%s: %zu damaged file(s) dropped\n", a->store.c_str(), r.dropped.size());
      }
      if (!r.unreadable.empty())
        throw std::runtime_error(a->store + ": " + std::to_string(r.unreadable.size()) +
                                 " file(s) could not be read and were kept as they are; make them readable (or "
                                 "remove them yourself) and run verify again");
      return;
    }
    const std::vector<std::string> unlisted = unlisted_store_files(a->store);
    const std::vector<StoreProblem> problems = verify_store(a->store);
    if (a->common.json) {
      nlohmann::json out = {{"store", a->store}, {"ok", problems.empty()}, {"problems", nlohmann::json::array()},
                            {"unlisted_files", unlisted}, {"notes", nlohmann::json::array()}};
      for (const StoreProblem& p : problems)
        out["problems"].push_back({{"kind", problem_kind_name(p.kind)}, {"what", p.what}});
      if (problems.empty()) out["notes"] = incomplete_stages(a->store);
      print_json(out);
    } else {
      for (const std::string& f : unlisted)
        std::printf("note: %s/%s is not in the manifest (a killed run's, replaced by the next run of its stage, or "
                    "put there by hand); nothing reads it\n",
                    a->store.c_str(), f.c_str());
    }
    if (problems.empty()) {
      if (a->common.json) return;
      for (const std::string& note : incomplete_stages(a->store)) std::printf("note: %s\n", note.c_str());
      std::printf("ok: %s verifies\n", a->store.c_str());
      return;
    }
    size_t unreadable = 0;
    for (const StoreProblem& p : problems) {
      if (!a->common.json) std::printf("problem: %s: %s\n", problem_kind_name(p.kind), p.what.c_str());
      unreadable += p.kind == ProblemKind::Unreadable;
    }
    throw std::runtime_error(a->store + ": " + std::to_string(problems.size()) + " problem(s) found (" +
                             std::to_string(problems.size() - unreadable) + " damaged, " + std::to_string(unreadable) +
                             " unreadable); `kvprep verify --repair` drops the damaged files" +
                             (unreadable ? ", not the unreadable ones: make those readable" : ""));
  });
}

void add_inspect_command(CLI::App& app) {
  struct Args {
    std::string store;
    CommonOptions common;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("inspect", "Summarise a store: chunks, tokens, stages, KV modes, sizes");
  cmd->footer("Example:\n  kvprep inspect --store stores/demo --json");
  cmd->add_option("--store", a->store, "store directory")->required();
  add_common_options(*cmd, a->common, "one JSON object: model, chunks, tokens, bytes, stages, kv, settings");
  cmd->callback([a] {
    const CommandSettings settings(a->common);
    const nlohmann::json s = inspect_store(a->store);
    if (a->common.json) {
      print_json(s);
      return;
    }
    std::printf("store    %s (model %s, %s)\n", a->store.c_str(), s["model"].get<std::string>().c_str(),
                s["model_fingerprint"].get<std::string>().c_str());
    std::printf("chunks   %llu, %llu tokens; %.1f MB on disk\n", s["chunks"].get<unsigned long long>(),
                s["tokens"].get<unsigned long long>(), s["bytes"].get<double>() / 1e6);
    for (const auto& [stage, rec] : s["stages"].items())
      std::printf("stage    %-20s %s%s\n", stage.c_str(), rec["completed_at"].get<std::string>().c_str(),
                  rec["counts"].contains("missing")
                      ? (", " + std::to_string(rec["counts"]["missing"].get<uint64_t>()) + " chunks without KV yet")
                            .c_str()
                      : "");
    for (const auto& [mode, kv] : s["kv"].items())
      std::printf("kv       %-12s %llu chunks, %llu rows for %llu tokens, %d layers %s, %.1f MB, %.0f bytes/token; "
                  "KV %.0f bytes/token in memory, %.0f on disk (%s)\n",
                  mode.c_str(), kv["chunks"].get<unsigned long long>(), kv["rows"].get<unsigned long long>(),
                  kv["tokens"].get<unsigned long long>(), kv["stored_layers"].get<int>(),
                  kv["dtype"].get<std::string>().c_str(), kv["bytes"].get<double>() / 1e6,
                  kv["bytes_per_token"].get<double>(), kv["kv_bytes_per_token"].get<double>(),
                  kv["disk_kv_bytes_per_token"].get<double>(), kv["entropy"].get<std::string>().c_str());
    std::printf("settings %s\n", s["settings"].dump().c_str());
  });
}

}  // namespace kvf::cli
