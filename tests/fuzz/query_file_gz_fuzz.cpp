// Question files (fusion/query_file.h) read through gzip: the input is the JSONL text, compressed here into a
// complete gzip stream, so that the mutations exercise the question lines behind the decompressor.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "fusion/query_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kvf::fuzz::scratch_path("questions.jsonl.gz");
  gzFile out = gzopen(path.c_str(), "wb");
  if (!out || (size > 0 && gzwrite(out, data, (unsigned)size) != (int)size) || gzclose(out) != Z_OK) std::abort();
  try {
    kvf::read_query_file(path);
  } catch (const kvf::Error&) {
  }
  return 0;
}
