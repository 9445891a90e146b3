#include "core/folder_path.h"

#include <algorithm>

namespace kvf {

std::string folder_path_problem(const std::string& path) {
  if (path.empty()) return "is empty";
  if (path.find('\0') != std::string::npos) return "holds a NUL byte";
  if (path[0] == '/') return "is an absolute path";
  for (size_t begin = 0; begin <= path.size();) {
    const size_t end = std::min(path.find('/', begin), path.size());
    const std::string part = path.substr(begin, end - begin);
    if (part.empty() || part == ".") return "has an empty or '.' part";
    if (part == "..") return "leads out of the folder through '..'";
    begin = end + 1;
  }
  return "";
}

}  // namespace kvf
