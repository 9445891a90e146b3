#include "text/tokenizer.h"

namespace kvf {

std::string without_partial_utf8_tail(std::string text) {
  size_t start = text.size(), continuation = 0;
  while (start > 0 && continuation < 3 && ((unsigned char)text[start - 1] & 0xC0) == 0x80) --start, ++continuation;
  if (start == 0) return text;
  const unsigned char lead = (unsigned char)text[start - 1];
  const size_t needed = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (lead >= 0xC0 && continuation < needed) text.resize(start - 1);
  return text;
}

}  // namespace kvf
