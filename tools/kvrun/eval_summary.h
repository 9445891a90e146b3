// `kvrun eval --json`: the sweep's result as one JSON object, read back from the files the report wrote.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace kvf::cli {

// {"out", "report", "results", "metrics", "plots", "points": [...]}: one point per row of OUT/metrics.csv, its
// columns as numbers (method and kv as text; NaN as null) except the median timings, which are grouped as
// "timings_ms" {ttft, retrieve, load, select, prefill, decode}, the names kvrun ask and generate use.
nlohmann::json eval_summary_json(const std::string& out_dir, bool plots);

}  // namespace kvf::cli
