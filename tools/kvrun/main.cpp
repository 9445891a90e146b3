// kvrun: query-time CLI. Subcommands register themselves here; each lives in its own file.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/error.h"
#include "generate_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kvrun: answer questions from precomputed KV caches (kvfuse)"};
  app.require_subcommand(1);
  kvf::cli::add_generate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // usage errors: one line, status 2, as shells expect
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return 2;
  } catch (const kvf::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
