// A JSONL corpus (io/corpus_reader.h), as `kvprep chunk --corpus` reads it.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/corpus_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::write_input("corpus.jsonl", data, size);
  try {
    kvf::read_corpus(path);
  } catch (const kvf::Error&) {
  }
  return 0;
}
