// What every kvfuse CLI shares: how it runs and fails (usage errors: one line, status 2; bad input: one
// "error: ..." line, status 1; never a crash), and its --threads convention.
#pragma once
#include <tbb/info.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

namespace kvf::cli {

inline int run_app(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // kvf::Error and anything else
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

// --threads 0 means every core.
inline int thread_count(int requested) { return requested > 0 ? requested : tbb::info::default_concurrency(); }

}  // namespace kvf::cli
