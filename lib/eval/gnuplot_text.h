// Text from data (a data set's file name, KV mode names read back from a results file) placed in a gnuplot
// script. gnuplot evaluates what a script says, `system("...")` included, so such text only ever enters a script
// as a single-quoted string literal built here.
#pragma once
#include <string>

namespace kvf {

// `text` as a gnuplot single-quoted string, quotes included: a ' is doubled (gnuplot's one escape in such
// strings), and line breaks and other control characters, which would end the command, become spaces.
std::string gnuplot_quoted(const std::string& text);

}  // namespace kvf
