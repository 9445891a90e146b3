#include "io/file_roles.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/regular_file.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;

// Whether `a` and `b` name one file (both must exist).
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// `link` resolved through every symlink, as far as the chain exists (a dangling link names a file to create).
std::string follow_links(const std::string& link) {
  fs::path p = link;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    const fs::path target = fs::read_symlink(p, ec);
    KVF_CHECK(!ec, link, ": cannot read the symlink: ", ec.message());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  fail(link, ": too many levels of symlinks");
}

}  // namespace

std::string output_target(const std::string& out, const std::vector<std::string>& inputs, const std::string& what) {
  KVF_CHECK(!out.empty(), what, " is empty");
  const std::string target = follow_links(out);
  const std::string kind = file_kind(target);
  KVF_CHECK(kind == "missing" || kind == "a regular file", what, " ", out,
            target == out ? "" : " (a symlink to " + target + ")", " is ", kind,
            "; it must name a regular file or a new one");
  const fs::path folder = fs::path(target).parent_path();
  KVF_CHECK(folder.empty() || fs::is_directory(folder), what, " ", out, ": the folder ", folder.string(),
            " does not exist");
  for (const std::string& input : inputs)
    KVF_CHECK(kind == "missing" || !same_file(target, input), what, " ", out, " is the input ", input,
              "; write the results to another file");
  return target;
}

void replace_output(const std::string& temp, const std::string& target) {
  const std::string kind = file_kind(target);
  KVF_CHECK(kind == "missing" || kind == "a regular file", target, " became ", kind,
            " while it was being written; the results stay in ", temp);
  KVF_CHECK(std::rename(temp.c_str(), target.c_str()) == 0, "cannot rename ", temp, " to ", target, ": ",
            std::strerror(errno));
}

void write_output_file(const std::string& path, const std::string& text) {
  const std::string target = output_target(path, {}, "output");
  const std::string partial = target + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    KVF_CHECK(out, partial, ": write failed");
  }
  replace_output(partial, target);
}

}  // namespace kvf
