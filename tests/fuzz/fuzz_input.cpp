#include "fuzz_input.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kvf::fuzz {
namespace {

struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    // Memory-backed where there is one: a file replaced on every execution costs a disk flush elsewhere (ext4
    // flushes a truncated-and-rewritten file at close), 100x the run itself.
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                       : tmp && *tmp                              ? tmp
                                                                                  : "/tmp";
    dir = base / ("kvf-fuzz-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace

std::string scratch_path(const std::string& name) {
  static const Scratch scratch;
  return (scratch.dir / name).string();
}

std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) std::abort();  // the scratch folder itself failing is no finding about the reader
  return path;
}

}  // namespace kvf::fuzz
