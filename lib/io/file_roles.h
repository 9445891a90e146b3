// Outputs named on the command line (docs/safety.md, rule 3): written beside their final path and renamed only
// over a regular file or nothing (a symlink is followed to its target, which is replaced); no file is both an
// input and an output of one command. Inputs are read through core/regular_file.h.
#pragma once
#include <string>
#include <vector>

namespace kvf {

// The file an output named `out` replaces: `out` itself, or the target of the symlink `out`. Refused (kvf::Error
// naming `what`, e.g. "--out") when that target exists and is not a regular file, when its folder does not exist,
// or when it is the same file as one of `inputs`.
std::string output_target(const std::string& out, const std::vector<std::string>& inputs, const std::string& what);

// Renames the finished `temp` over `target` (from output_target), checking again that `target` is a regular file
// or absent: nothing but a regular file is ever replaced.
void replace_output(const std::string& temp, const std::string& target);

// Writes `text` as the output `path` (output_target's rules): to "<target>.partial", checked, then renamed over
// the target, so the file is always whole.
void write_output_file(const std::string& path, const std::string& text);

}  // namespace kvf
