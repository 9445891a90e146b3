// kvprep: the offline pipeline CLI. Each stage registers its subcommand here and lives in its own file.
#include "chunk_command.h"
#include "compress_command.h"
#include "common/cli.h"
#include "prefill_command.h"
#include "retrieval_commands.h"
#include "run_command.h"
#include "verify_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kvprep: turn a corpus into a store of precomputed KV caches (kvfuse)"};
  app.require_subcommand(1);
  kvf::cli::add_chunk_command(app);
  kvf::cli::add_embed_command(app);
  kvf::cli::add_index_command(app);
  kvf::cli::add_neighbors_command(app);
  kvf::cli::add_search_command(app);
  kvf::cli::add_prefill_command(app);
  kvf::cli::add_compress_command(app);
  kvf::cli::add_share_search_command(app);
  kvf::cli::add_verify_command(app);
  kvf::cli::add_inspect_command(app);
  kvf::cli::add_run_command(app);
  return kvf::cli::run_app(app, argc, argv);
}
