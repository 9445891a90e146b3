// kvf_random_model: writes a random-weight GGUF of a real model's shape (or a tokenizer-only GGUF), for benchmarks
// and device runs where the real weights may not travel (io/random_model.h).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/cli.h"
#include "core/error.h"
#include "io/random_model.h"

namespace {
const std::map<std::string, kvf::GgmlType> kTypes = {{"f32", kvf::GgmlType::F32},   {"f16", kvf::GgmlType::F16},
                                                      {"bf16", kvf::GgmlType::BF16}, {"q8_0", kvf::GgmlType::Q8_0},
                                                      {"q4_0", kvf::GgmlType::Q4_0}, {"q4_1", kvf::GgmlType::Q4_1}};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvf_random_model: write a random-weight GGUF of a real model's shape"};
  std::string shape, out, tokenizer_from, tokenizer_only_from;
  kvf::GgmlType type = kvf::GgmlType::BF16;
  int layers = 0;
  uint32_t seed = 42;
  std::string shapes;
  for (const std::string& n : kvf::real_model_shape_names()) shapes += (shapes.empty() ? "" : ", ") + n;
  app.add_option("--shape", shape, "the model whose shape to take: " + shapes);
  app.add_option("--layers", layers, "keep only this many layers (0: all of the shape's)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--type", type, "storage type of the 2-D weights (default bf16)")
      ->transform(CLI::CheckedTransformer(kTypes, CLI::ignore_case).description("one of f32, f16, bf16, q8_0, q4_0, q4_1"));
  app.add_option("--seed", seed, "weights seed")->capture_default_str();
  app.add_option("--tokenizer-from", tokenizer_from,
                 "a GGUF (a model or a --tokenizer-only file) whose tokenizer the model takes, with its vocabulary size");
  app.add_option("--tokenizer-only-from", tokenizer_only_from,
                 "instead of a model, write the tokenizer of this GGUF alone (a few MB that travel)");
  app.add_option("--out", out, "GGUF file to write")->required();
  app.footer(
      "Examples:\n"
      "  kvf_random_model --shape qwen2.5-7b --layers 2 --out qwen7b-2l.gguf\n"
      "  kvf_random_model --tokenizer-only-from ~/.cache/kvfuse/models/qwen0.5b/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
      " --out qwen-tokenizer.gguf\n"
      "  kvf_random_model --shape qwen2.5-7b --tokenizer-from qwen-tokenizer.gguf --out qwen7b.gguf");
  app.callback([&] {
    const auto t0 = std::chrono::steady_clock::now();
    if (!tokenizer_only_from.empty()) {
      KVF_CHECK(shape.empty(), "--tokenizer-only-from writes no model: drop --shape");
      kvf::write_tokenizer_only(tokenizer_only_from, out);
    } else {
      KVF_CHECK(!shape.empty(), "--shape is required (one of ", shapes, ")");
      kvf::RandomModelSpec spec = kvf::real_model_shape(shape);
      if (layers > 0) spec.n_layers = layers;
      spec.matrix_type = type;
      spec.seed = seed;
      spec.tokenizer_from = tokenizer_from;
      kvf::write_random_model(spec, out);
    }
    std::printf("%s written in %.1f s\n", out.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  });
  return kvf::cli::run_app(app, argc, argv);
}
