// The roles files play for kvfuse's commands (docs/safety.md): an input is read only if it is a regular file (a
// FIFO or device would hang or stream forever); an output named on the command line is written beside its final
// path and renamed only over a regular file or nothing (a symlink is followed to its target, which is replaced);
// no file is both an input and an output of one command.
#pragma once
#include <string>
#include <vector>

namespace kvf {

// What `path` is, in words ("a directory", "a FIFO", "a character device", ...), following symlinks; "missing"
// when it does not exist.
std::string file_kind(const std::string& path);

// Throws kvf::Error naming `path` and `what` ("the question file") unless it is a regular file (after symlinks).
void require_regular_input(const std::string& path, const std::string& what);

// The whole of the regular file `path` (require_regular_input's check first).
std::string read_input_file(const std::string& path, const std::string& what);

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
