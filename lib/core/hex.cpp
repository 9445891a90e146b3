#include "core/hex.h"

#include <cinttypes>
#include <cstdio>

#include "core/error.h"

namespace kvf {

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, value);
  return buf;
}

uint64_t parse_hex64(const std::string& text, const std::string& what) {
  KVF_CHECK(text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos, what,
            ": expected 16 lower-case hex digits, got '", text, "'");
  return std::stoull(text, nullptr, 16);
}

}  // namespace kvf
