// kvrun: query-time CLI. Subcommands register themselves here; each lives in its own file.
#include "common/cli.h"
#include "common/version.h"
#include "generate_command.h"
#include "query_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kvrun: answer questions from precomputed KV caches (kvfuse)"};
  app.require_subcommand(1);
  kvf::cli::add_version_flag(app, "kvrun");
  kvf::cli::add_ask_command(app);
  kvf::cli::add_batch_command(app);
  kvf::cli::add_eval_command(app);
  kvf::cli::add_generate_command(app);
  kvf::cli::add_serve_command(app);
  return kvf::cli::run_app(app, argc, argv);
}
