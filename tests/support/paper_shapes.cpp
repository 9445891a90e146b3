#include "support/paper_shapes.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "io/model_paths.h"
#include "support/model_files.h"

namespace kvf::test {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KVF_CHECK(in.good(), path, ": cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string template_file(const std::string& name) {
  if (name == "mistral-7b-v0.2") return "mistralai-Mistral-7B-Instruct-v0.2.jinja";
  if (name == "llama-3.1-8b") return "meta-llama-Llama-3.1-8B-Instruct.jinja";
  if (name == "qwen2.5-7b") return "Qwen-Qwen2.5-7B-Instruct.jinja";
  fail("paper shapes: no model named '", name, "'");
}

}  // namespace

std::vector<std::string> paper_shape_names() { return {"mistral-7b-v0.2", "llama-3.1-8b", "qwen2.5-7b"}; }

RandomModelSpec paper_shape_spec(const std::string& name) {
  const std::string tmpl = fixture_path("chat_templates/" + template_file(name));
  RandomModelSpec s = real_model_shape(name);
  s.n_layers = 2;
  s.matrix_type = GgmlType::Q8_0;
  s.seed = 7;
  s.tokenizer_from = kvfuse_home() + "/third_party/vocab/" + name + ".gguf";
  KVF_CHECK(std::filesystem::is_regular_file(s.tokenizer_from), s.tokenizer_from,
            " does not exist: run scripts/setup.sh paper-vocabs (make setup-test installs it)");
  s.chat_template = read_text(tmpl);
  return s;
}

std::string paper_shape_model(const std::string& name) {
  const RandomModelSpec s = paper_shape_spec(name);
  // The file name keys everything that shapes the bytes, so a changed spec, vocabulary or template writes anew.
  std::ostringstream key;
  key << s.arch << ' ' << s.n_layers << ' ' << s.hidden << ' ' << s.n_heads << ' ' << s.n_kv_heads << ' ' << s.ffn
      << ' ' << s.context << ' ' << s.rope_theta << ' ' << s.rms_eps << ' ' << s.tied_output << ' '
      << (int)s.matrix_type << ' ' << s.seed << ' ' << s.sliding_window << ' ' << sha256_file(s.tokenizer_from)
      << ' ' << sha256_hex(s.chat_template);
  for (float f : s.rope_freq_factors) key << ' ' << f;
  const std::string dir = models_dir() + "/random";
  const std::string path = dir + "/" + name + "-2l-q8_0-" + sha256_hex(key.str()).substr(0, 16) + ".gguf";
  if (!std::filesystem::exists(path)) {
    std::filesystem::create_directories(dir);
    write_random_model(s, path);
  }
  return path;
}

}  // namespace kvf::test
