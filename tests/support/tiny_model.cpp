#include "support/tiny_model.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

namespace kvf::test {

std::string write_tiny_model(const TinyModelSpec& s) {
  const auto dir = std::filesystem::temp_directory_path() / "kvfuse-tests";
  std::filesystem::create_directories(dir);
  static std::atomic<int> written{0};  // two specs in one process never share a file
  const std::string path = (dir / (s.arch + (s.lckv_kv_layers.empty() ? "" : "-lckv") + "-" +
                                   std::to_string(s.seed) + "-" + std::to_string(s.n_layers) + "x" +
                                   std::to_string(s.hidden) + "-" + ggml_type_name(s.matrix_type) + "-" +
                                   std::to_string(::getpid()) + "-" + std::to_string(written++) + ".gguf"))
                               .string();
  write_random_model(s, path);
  return path;
}

}  // namespace kvf::test
