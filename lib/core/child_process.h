// Helper programs (gnuplot) run from an argument vector, never through a shell: no text from data or from the
// command line can become a command.
#pragma once
#include <string>
#include <vector>

namespace kvf {

// Whether `name` is an executable file in one of $PATH's folders.
bool program_on_path(const std::string& name);

// Runs argv[0] (looked up in $PATH) with `argv` in `working_dir`, waits for it, and returns its exit status
// (128 + the signal when a signal ended it; 127 when it could not be started). stdin is /dev/null.
int run_program(const std::vector<std::string>& argv, const std::string& working_dir);

}  // namespace kvf
