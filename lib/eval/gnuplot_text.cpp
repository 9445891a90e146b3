#include "eval/gnuplot_text.h"

namespace kvf {

std::string gnuplot_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'')
      out += "''";
    else if ((unsigned char)c < 0x20 || c == 0x7f)
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

}  // namespace kvf
