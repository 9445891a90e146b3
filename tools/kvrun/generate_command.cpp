#include "generate_command.h"

namespace kvf::cli {
void add_generate_command(CLI::App& app) {
  app.add_subcommand("generate", "Generate a continuation of a prompt (greedy)");
}
}  // namespace kvf::cli
