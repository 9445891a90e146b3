#include "eval/eval_pipeline.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "io/model_paths.h"

namespace kvf {

std::string data_dir() {
  if (const char* env = std::getenv("KVFUSE_DATA"); env && *env) return env;
  const std::string fetched = kvfuse_home() + "/data";  // where `make data` (scripts/get_data.py) puts the sets
  std::error_code ec;
  if (std::filesystem::is_directory(fetched, ec)) return fetched;
  return "../shared/data";
}

std::string resolve_dataset(const std::string& name) {
  if (name.empty() || std::filesystem::exists(name) || name.find('/') != std::string::npos) return name;
  return (std::filesystem::path(data_dir()) / name).string();
}

std::string model_tag(const std::string& model) {
  std::filesystem::path p(model);
  if (p.has_relative_path() && p.filename().empty()) p = p.parent_path();  // "dir/" names dir
  std::string tag = p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
  for (char& c : tag)
    if (!std::isalnum((unsigned char)c) && c != '.' && c != '-' && c != '_') c = '-';
  return tag.empty() ? "model" : tag;
}

void apply_eval_pipeline(const std::string& path, const std::set<std::string>& given, EvalOptions& o) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    fail(path, ": ", e.what());
  }
  const YAML::Node eval = root["eval"];
  KVF_CHECK(eval && eval.IsMap(), path, ": no 'eval' section (the sweep to run); see pipelines/paper-hotpotqa.yaml");
  const std::set<std::string> known = {"dataset", "limit",  "setting",     "methods", "ratios",
                                       "kv",      "max_tokens", "top_k", "link_tokens", "out",
                                       "reference_kv"};
  for (const auto& kv : eval)
    KVF_CHECK(known.count(kv.first.as<std::string>()), path, ": unknown key 'eval.", kv.first.as<std::string>(), "'");
  const auto take = [&](const YAML::Node& section, const std::string& prefix, const std::string& key, auto& into) {
    if (given.count(key) || !section[key]) return;
    try {
      into = section[key].as<std::decay_t<decltype(into)>>();
    } catch (const YAML::Exception&) {
      fail(path, ": '", prefix, key, "' has the wrong type (", YAML::Dump(section[key]), ")");
    }
  };
  take(root, "", "store", o.store_dir);
  take(root, "", "model", o.model);
  // Another model than the file's gets its own store and results: the file's folders with the model's name.
  const bool other_model = given.count("model") && root["model"].IsScalar() && root["model"].Scalar() != o.model;
  std::string pipeline_out;
  take(eval, "eval.", "out", pipeline_out);
  take(root, "", "embedder", o.embedder);
  take(eval, "eval.", "dataset", o.dataset);
  take(eval, "eval.", "limit", o.limit);
  take(eval, "eval.", "setting", o.setting);
  take(eval, "eval.", "ratios", o.ratios);
  take(eval, "eval.", "kv", o.kv_modes);
  take(eval, "eval.", "max_tokens", o.max_tokens);
  take(eval, "eval.", "top_k", o.top_k);
  take(eval, "eval.", "link_tokens", o.link_tokens);
  take(eval, "eval.", "reference_kv", o.reference_kv);
  if (!pipeline_out.empty()) o.out_dir = pipeline_out;
  if (other_model) {
    const std::string tag = model_tag(o.model);
    if (!given.count("store") && root["store"]) o.store_dir += "-" + tag;
    if (!given.count("out") && !pipeline_out.empty()) o.out_dir += "-" + tag;
  }
  std::vector<std::string> methods;
  take(eval, "eval.", "methods", methods);
  if (!methods.empty()) {
    o.methods.clear();
    for (const std::string& m : methods) {
      try {
        o.methods.push_back(parse_method(m));
      } catch (const Error& e) {
        fail(path, ": eval.methods: ", e.what());
      }
    }
  }
  o.dataset = resolve_dataset(o.dataset);
}

}  // namespace kvf
