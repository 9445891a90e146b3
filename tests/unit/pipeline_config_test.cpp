// Pipeline values every stage would refuse are refused by check_pipeline, before any stage runs (run_pipeline
// loads the file the same way), in one line naming the file, the YAML key and the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipeline/pipeline.h"
#include "support/temp_dir.h"
#include "support/test_values.h"

namespace kvf {
namespace {

using ::testing::HasSubstr;
using test::error_of;

std::string pipeline_file(const std::string& body) {
  const std::string path = (test::fresh_test_dir() / "p.yaml").string();
  std::ofstream(path) << "store: /nonexistent/store\ncorpus: /nonexistent/c.jsonl\nmodel: /nonexistent/m.gguf\n"
                      << body;
  return path;
}

TEST(PipelineConfig, BadValuesAreNamedBeforeAnyStage) {
  const struct {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"prefill: {dtype: f32}\n", "'prefill.dtype' is 'f32': expected f16 or bf16"},
      {"prefill: {compute: gpu}\n", "'prefill.compute': compute mode 'gpu': expected fast or f32"},
      {"prefill: {neighbor_order: nearest}\n", "'prefill.neighbor_order': neighbour order 'nearest': expected best-first or best-last"},
      {"prefill: {backend: tpu}\n", "'prefill.backend' is 'tpu': expected cpu or cuda"},
      {"prefill: {modes: independent}\n", "'prefill.modes' is independent: expected a list"},
      {"prefill: {modes: [bogus]}\n", "prefill.modes: 'bogus' is not a prefill mode"},
      {"prefill: {batch_tokens: 0}\n", "'prefill.batch_tokens' is 0: expected a positive number"},
      {"prefill: {neighbor_cache_mb: -1}\n", "'prefill.neighbor_cache_mb' is -1: expected 0 to 16777216 MiB"},
      {"index: {kind: lsh}\n", "'index.kind' is 'lsh': expected flat, ivf, ivfpq or hnsw"},
      {"neighbors: {top_n: 100000}\n", "'neighbors.top_n' is 100000: expected 1 to 100"},
      {"neighbors: {top_n: 0}\n", "'neighbors.top_n' is 0: expected 1 to 100"},
      {"threads: -1\n", "'threads' is -1: expected 0 (every core) or a positive thread count"},
      {"chunk: {chunk_tokens: 0}\n", "'chunk.chunk_tokens' is 0: expected 1 to 1048576"},
      {"neighbors: {top_n: 5}\nneighbors: {top_n: 6}\n", "key 'neighbors' appears twice"},
      {"prefill: {dtype: f16, dtype: bf16}\n", "key 'prefill.dtype' appears twice"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    const std::string path = pipeline_file(c.yaml);
    const std::string message = error_of([&] { check_pipeline(path, {}); });
    EXPECT_THAT(message, HasSubstr(path + ": "));
    EXPECT_THAT(message, HasSubstr(c.message));
  }
  const std::string path = pipeline_file("");
  EXPECT_THAT(error_of([&] { check_pipeline(path, {"neighbors.top_n=-3"}); }),
              HasSubstr("'neighbors.top_n' is -3"));
  // Sound values, sections left out: the first complaint is the (missing) model, after every value passed.
  EXPECT_THAT(error_of([&] { check_pipeline(path, {}); }), HasSubstr("model '/nonexistent/m.gguf'"));
  EXPECT_THAT(error_of([&] { check_pipeline(pipeline_file("prefill: {modes: [similarity], dtype: bf16}\n"), {}); }),
              HasSubstr("model '/nonexistent/m.gguf'"));
}

// A key that is a mapping or a list, not a name (found by tests/fuzz): an error naming the file and the place,
// where yaml-cpp's conversion exception used to escape.
TEST(PipelineConfig, KeysThatAreNoNamesAreNamedErrors) {
  for (const char* yaml : {"? [a, b]\n: 1\n", "prefill: {? {x: 1} : 2}\n", "compress:\n  - {to: a, from: b}: c\n"}) {
    SCOPED_TRACE(yaml);
    const std::string path = pipeline_file(yaml);
    const std::string message = error_of([&] { check_pipeline(path, {}); });
    EXPECT_THAT(message, HasSubstr(path + ": yaml-cpp: error at line "));
  }
}

// A model path the system refuses to look up (longer than a file name may be; found by tests/fuzz) is an error
// naming the key's value, where std::filesystem's exception used to escape.
TEST(PipelineConfig, AnUnusableModelPathIsANamedError) {
  const std::string path = pipeline_file("");
  const std::string model(5000, 'm');
  EXPECT_THAT(error_of([&] { check_pipeline(path, {"model=" + model}); }),
              HasSubstr("model '" + model + "': " + model + ": File name too long"));
}

}  // namespace
}  // namespace kvf
