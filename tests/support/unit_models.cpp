#include "support/unit_models.h"

#include <filesystem>

#include "support/hf_folder_writer.h"

namespace kvf::test {

RandomModelSpec tiny_text_decoder_spec(uint32_t seed) {
  RandomModelSpec s;
  s.n_layers = 2, s.hidden = 64, s.n_heads = 4, s.n_kv_heads = 2, s.ffn = 128;
  s.vocab = 300;  // write_hf_folder's tokenizer: ids 0-255 are the bytes
  s.context = 2048;
  s.matrix_type = GgmlType::F32;
  s.seed = seed;
  return s;
}

std::string write_tiny_text_decoder(const std::string& dir, const RandomModelSpec& spec) {
  std::filesystem::create_directories(dir);
  const std::string gguf = dir + ".gguf";
  write_random_model(spec, gguf);
  write_hf_folder(gguf, dir);
  std::filesystem::remove(gguf);
  return dir;
}

std::string write_tiny_spm_decoder(const std::string& path, RandomModelSpec spec) {
  spec.placeholder_vocab = true;
  write_random_model(spec, path);
  return path;
}

std::string write_tiny_embedder(const std::string& dir, const RandomBertSpec& spec) {
  write_random_bert(spec, dir);
  return dir;
}

}  // namespace kvf::test
