// The one error type of kvfuse: a message that names the file, line or field and the bad value.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kvf {

// Bytes a message quotes from a damaged file (NUL, control characters, invalid UTF-8) shown as \xNN; valid
// UTF-8, newlines and tabs are kept. Idempotent: an escaped message passes through unchanged.
std::string printable_message(const std::string& message);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(printable_message(message)) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

// Builds a message from pieces: fail("gguf ", path, ": tensor '", name, "' has unknown type ", t).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str());
}

}  // namespace kvf

// Checks an input-dependent condition; on failure throws kvf::Error with the streamed message.
#define KVF_CHECK(cond, ...)          \
  do {                                \
    if (!(cond)) ::kvf::fail(__VA_ARGS__); \
  } while (0)
