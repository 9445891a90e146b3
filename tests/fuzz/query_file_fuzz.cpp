// Question files (fusion/query_file.h), as given: plain JSONL, or gzip when the input starts with gzip's magic
// bytes (written as questions.jsonl.gz then), so that damaged and cut streams reach the gzip checks.
#include <cstdint>

#include "core/error.h"
#include "fusion/query_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const std::string path = kvf::fuzz::write_input(gz ? "questions.jsonl.gz" : "questions.jsonl", data, size);
  try {
    kvf::read_query_file(path);
  } catch (const kvf::Error&) {
  }
  return 0;
}
