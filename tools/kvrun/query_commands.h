// `kvrun ask` (one question), `kvrun batch` (a question file, with the next questions' KV loaded ahead) and
// `kvrun eval` (a method x ratio x KV-mode sweep over a QA data set, with its report).
#pragma once
#include <CLI/CLI.hpp>

namespace kvf::cli {

void add_ask_command(CLI::App& app);
void add_batch_command(CLI::App& app);
void add_eval_command(CLI::App& app);  // eval_command.cpp
void add_serve_command(CLI::App& app);  // serve_command.cpp

}  // namespace kvf::cli
