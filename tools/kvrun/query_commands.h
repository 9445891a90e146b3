// `kvrun ask` (one question) and `kvrun batch` (a question file, with the next questions' KV loaded ahead).
#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {

void add_ask_command(CLI::App& app);
void add_batch_command(CLI::App& app);

}  // namespace kvf::cli
