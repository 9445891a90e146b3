#include "eval_summary.h"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/regular_file.h"

namespace kvf::cli {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

nlohmann::json number_or_text(const std::string& text) {
  try {
    size_t used = 0;
    const double x = std::stod(text, &used);
    if (used != text.size()) return text;
    return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
  } catch (const std::exception&) {
    return text;
  }
}

}  // namespace

nlohmann::json eval_summary_json(const std::string& out_dir, bool plots) {
  const fs::path out(out_dir);
  const std::string metrics = (out / "metrics.csv").string();
  std::stringstream csv(read_regular_file(metrics));
  std::string line;
  KVF_CHECK(std::getline(csv, line), metrics, ": empty");
  const std::vector<std::string> header = split_csv_line(line);
  nlohmann::json points = nlohmann::json::array();
  const std::string ms_suffix = "_ms";
  while (std::getline(csv, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> fields = split_csv_line(line);
    KVF_CHECK(fields.size() == header.size(), metrics, ": a row of ", fields.size(), " fields under ", header.size(),
              " columns");
    nlohmann::json point = nlohmann::json::object(), timings = nlohmann::json::object();
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string& name = header[i];
      if (name == "method" || name == "kv") {
        point[name] = fields[i];
      } else if (name.size() > ms_suffix.size() && name.compare(name.size() - ms_suffix.size(), ms_suffix.size(),
                                                               ms_suffix) == 0) {
        timings[name.substr(0, name.size() - ms_suffix.size())] = number_or_text(fields[i]);
      } else {
        point[name] = number_or_text(fields[i]);
      }
    }
    point["timings_ms"] = timings;
    points.push_back(point);
  }
  return {{"out", out_dir},
          {"report", (out / "report.md").string()},
          {"results", (out / "results.jsonl").string()},
          {"metrics", metrics},
          {"plots", plots},
          {"points", points}};
}

}  // namespace kvf::cli
