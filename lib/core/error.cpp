#include "core/error.h"

namespace kvf {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (no overlongs, surrogates or code points past U+10FFFF),
// or 0 when the bytes there are not one.
size_t utf8_sequence(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return (unsigned char)s[i + k]; };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) >= 0xA0)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) >= 0x90)) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

std::string printable_message(const std::string& message) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size();) {
    const unsigned char c = (unsigned char)message[i];
    if ((c >= 0x20 && c < 0x7F) || c == '\n' || c == '\t') {
      out += (char)c;
      ++i;
    } else if (const size_t n = c >= 0x80 ? utf8_sequence(message, i) : 0) {
      out.append(message, i, n);
      i += n;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    }
  }
  return out;
}

}  // namespace kvf
