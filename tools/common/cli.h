// What every kvfuse CLI shares: how it runs and fails (usage errors: one line, status 2; bad input: one
// "error: ..." line, status 1; never a crash), and its --threads convention. The options every subcommand takes
// (--threads, --json, --quiet): common_options.h; --version: version.h.
#pragma once
#include <tbb/info.h>

#include <CLI/CLI.hpp>
#include <cmath>
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
  } catch (const CLI::CallForVersion& e) {
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

// A number that is finite and in [low, high]. CLI11's own Range and NonNegativeNumber let NaN through (every
// comparison with NaN is false), so options that size memory or set thresholds use this.
inline CLI::Validator finite_in(double low, double high) {
  return CLI::Validator(
      [low, high](std::string& value) -> std::string {
        double x = 0;
        size_t used = 0;
        try {
          x = std::stod(value, &used);
        } catch (const std::exception&) {
          return "'" + value + "' is not a number";
        }
        if (used != value.size()) return "'" + value + "' is not a number";
        if (!std::isfinite(x)) return "'" + value + "' is not a finite number";
        if (x < low || x > high) {
          char range[96];
          std::snprintf(range, sizeof range, " not in range [%g - %g]", low, high);
          return "Value " + value + range;
        }
        return "";
      },
      "FINITE");
}

// --threads 0 means every core.
inline int thread_count(int requested) { return requested > 0 ? requested : tbb::info::default_concurrency(); }

}  // namespace kvf::cli
