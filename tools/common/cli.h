// What every kvfuse CLI shares: how it runs and fails (usage errors: one line, status 2; bad input: one
// "error: ..." line, status 1; never a crash), and its --threads convention.
#pragma once
#include <tbb/info.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

namespace kvf::cli {

// `where` prefixes error lines ("rank 1 of 4: "), for processes that are one of many.
inline int run_app(CLI::App& app, int argc, char** argv, const std::string& where = "") {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s%s (see --help)\n", where.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {  // kvf::Error and anything else
    std::fprintf(stderr, "error: %s%s\n", where.c_str(), e.what());
    return 1;
  }
  return 0;
}

// A check that takes what `parse` takes and fails with its message, so an option's names are written once: in the
// library's parser for them (compute_mode_from_name, parse_method, ...).
template <class Parse>
CLI::Validator accepted_by(Parse parse) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        try {
          parse(value);
          return "";
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      "");
}

// --threads 0 means every core.
inline int thread_count(int requested) { return requested > 0 ? requested : tbb::info::default_concurrency(); }

}  // namespace kvf::cli
