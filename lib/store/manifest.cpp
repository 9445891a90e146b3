#include "store/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/folder_path.h"
#include "core/hex.h"
#include "core/json_file.h"
#include "io/durable_file.h"
#include "store/store_files.h"

namespace kvf {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Typed access to the fields of a manifest being loaded; every message names the file and the field path.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }

  const json& field(const json& object, const std::string& name, const std::string& path) const {
    const auto it = object.find(name);
    if (it == object.end()) fail(file_, ": missing field '", path, "'");
    return *it;
  }
  std::string string(const json& object, const std::string& name, const std::string& path) const {
    const json& v = field(object, name, path);
    if (!v.is_string()) bad(path, v, "a string");
    return v.get<std::string>();
  }
  uint64_t count(const json& object, const std::string& name, const std::string& path) const {
    const json& v = field(object, name, path);
    if (!v.is_number_unsigned()) bad(path, v, "a non-negative integer");
    return v.get<uint64_t>();
  }
  uint64_t hash(const json& object, const std::string& name, const std::string& path) const {
    return parse_hex64(string(object, name, path), file_ + ": field '" + path + "'");
  }
  const json& array(const json& object, const std::string& name, const std::string& path) const {
    const json& v = field(object, name, path);
    if (!v.is_array()) bad(path, v, "an array");
    return v;
  }
  const json& object(const json& parent, const std::string& name, const std::string& path) const {
    const json& v = field(parent, name, path);
    if (!v.is_object()) bad(path, v, "an object");
    return v;
  }
  [[noreturn]] void bad(const std::string& path, const json& v, const char* expected) const {
    std::string shown = v.dump();
    if (shown.size() > 60) shown = shown.substr(0, 60) + "...";
    fail(file_, ": field '", path, "' must be ", expected, ", got ", v.type_name(), " ", shown);
  }

 private:
  std::string file_;
};

StageRecord read_stage(const Reader& r, const json& j, const std::string& path) {
  if (!j.is_object()) r.bad(path, j, "an object");
  StageRecord s;
  s.stage = r.string(j, "stage", path + ".stage");
  s.completed_at = r.string(j, "completed_at", path + ".completed_at");
  s.inputs_hash = r.hash(j, "inputs_hash", path + ".inputs_hash");
  const json& counts = r.object(j, "counts", path + ".counts");
  for (const auto& [name, value] : counts.items()) s.counts[name] = r.count(counts, name, path + ".counts." + name);
  return s;
}

CommittedFile read_file_record(const Reader& r, const json& j, const std::string& path) {
  if (!j.is_object()) r.bad(path, j, "an object");
  CommittedFile f;
  f.path = r.string(j, "path", path + ".path");
  require_relative_store_path(f.path, r.file() + ": field '" + path + ".path'");
  f.bytes = r.count(j, "bytes", path + ".bytes");
  f.xxh3 = r.hash(j, "xxh3", path + ".xxh3");
  if (j.contains("previous")) {
    const json& previous = r.object(j, "previous", path + ".previous");
    f.replacing = true;
    f.previous_bytes = r.count(previous, "bytes", path + ".previous.bytes");
    f.previous_xxh3 = r.hash(previous, "xxh3", path + ".previous.xxh3");
  }
  return f;
}

// Checks the magic and returns the manifest's format version, once it is one this kvfuse reads.
int64_t read_manifest_format(const Reader& r, const json& j) {
  const std::string magic = r.string(j, "magic", "magic");
  KVF_CHECK(magic == kManifestMagic, r.file(), ": field 'magic' is '", magic, "', expected '", kManifestMagic,
            "': not a kvfuse store manifest");
  const json& version = r.field(j, "format_version", "format_version");
  if (!version.is_number_integer()) r.bad("format_version", version, "an integer");
  return require_known_version(r.file(), "field 'format_version'", version.get<int64_t>(), kManifestFormatVersion);
}

// The published generation (docs/store.md, "Generations"), optional in every version: a store never published
// has none, and its readers use the working files.
PublishedGeneration read_published(const Reader& r, const json& p) {
  PublishedGeneration published;
  published.number = r.count(p, "generation", "published.generation");
  published.chunks = r.string(p, "chunks", "published.chunks");
  published.index = r.string(p, "index", "published.index");
  require_relative_store_path(published.chunks, r.file() + ": field 'published.chunks'");
  require_relative_store_path(published.index, r.file() + ": field 'published.index'");
  published.index_settings = r.object(p, "index_settings", "published.index_settings");
  return published;
}

}  // namespace

const StageRecord* Manifest::find_stage(const std::string& stage) const {
  for (const StageRecord& s : stages) {
    if (s.stage == stage) return &s;
  }
  return nullptr;
}

void Manifest::record_stage(StageRecord record) {
  for (StageRecord& s : stages) {
    if (s.stage == record.stage) {
      s = std::move(record);
      return;
    }
  }
  stages.push_back(std::move(record));
}

const CommittedFile* Manifest::find_file(const std::string& path) const {
  for (const CommittedFile& f : files)
    if (f.path == path) return &f;
  return nullptr;
}

void Manifest::record_file(CommittedFile file) {
  for (CommittedFile& f : files) {
    if (f.path == file.path) {
      f = std::move(file);
      return;
    }
  }
  files.push_back(std::move(file));
}

std::string manifest_path(const std::string& store_dir) { return (fs::path(store_dir) / kManifestFile).string(); }

bool has_manifest(const std::string& store_dir) {
  const std::string path = manifest_path(store_dir);
  std::error_code ec;
  const bool found = fs::exists(path, ec);  // ENOENT is "no", other errors (a name too long, no access) are errors
  KVF_CHECK(!ec, "store ", store_dir, ": cannot look for ", kManifestFile, ": ", ec.message());
  return found;
}

Manifest load_manifest(const std::string& store_dir) {
  const std::string path = manifest_path(store_dir);
  const json j = read_json_file(path);
  const Reader r(path);
  KVF_CHECK(j.is_object(), path, ": expected a JSON object, got ", j.type_name());
  read_manifest_format(r, j);  // version 1 is the only one so far

  Manifest m;
  m.model_fingerprint = r.hash(j, "model_fingerprint", "model_fingerprint");
  m.tokenizer_hash = r.hash(j, "tokenizer_hash", "tokenizer_hash");
  m.model_name = r.string(j, "model_name", "model_name");
  m.settings = r.object(j, "settings", "settings");
  for (const auto& [section, value] : m.settings.items()) {
    if (!value.is_object()) r.bad("settings." + section, value, "an object");
  }
  const json& stages = r.array(j, "stages", "stages");
  for (size_t i = 0; i < stages.size(); ++i) {
    StageRecord s = read_stage(r, stages[i], "stages[" + std::to_string(i) + "]");
    KVF_CHECK(!m.find_stage(s.stage), path, ": stage '", s.stage, "' is recorded twice (stages[", i, "])");
    m.stages.push_back(std::move(s));
  }
  const json& files = r.array(j, "files", "files");
  for (size_t i = 0; i < files.size(); ++i) {
    CommittedFile f = read_file_record(r, files[i], "files[" + std::to_string(i) + "]");
    m.record_file(std::move(f));
  }
  KVF_CHECK(m.files.size() == files.size(), path, ": a file path is recorded twice in 'files'");
  if (j.contains("published")) m.published = read_published(r, r.object(j, "published", "published"));
  return m;
}

void save_manifest(const std::string& store_dir, const Manifest& m) {
  json stages = json::array();
  for (const StageRecord& s : m.stages) {
    stages.push_back({{"stage", s.stage},
                      {"completed_at", s.completed_at},
                      {"inputs_hash", hex64(s.inputs_hash)},
                      {"counts", s.counts}});
  }
  json files = json::array();
  for (const CommittedFile& f : m.files) {
    json record = {{"path", f.path}, {"bytes", f.bytes}, {"xxh3", hex64(f.xxh3)}};
    if (f.replacing) record["previous"] = {{"bytes", f.previous_bytes}, {"xxh3", hex64(f.previous_xxh3)}};
    files.push_back(std::move(record));
  }
  json j = {{"magic", kManifestMagic},
                  {"format_version", kManifestFormatVersion},
                  {"model_fingerprint", hex64(m.model_fingerprint)},
                  {"tokenizer_hash", hex64(m.tokenizer_hash)},
                  {"model_name", m.model_name},
                  {"settings", m.settings},
                  {"stages", stages},
                  {"files", files}};
  if (m.published.number > 0)
    j["published"] = {{"generation", m.published.number},
                      {"chunks", m.published.chunks},
                      {"index", m.published.index},
                      {"index_settings", m.published.index_settings}};
  PendingFile file(manifest_path(store_dir));
  {
    std::ofstream out(file.temp(), std::ios::binary | std::ios::trunc);
    out << j.dump(2) << '\n';
    out.close();
    KVF_CHECK(out, file.temp(), ": cannot write");
  }
  file.commit();
}

void require_same_model(const Manifest& m, uint64_t model_fingerprint, const std::string& model_name,
                        const std::string& store_dir) {
  KVF_CHECK(m.model_fingerprint == model_fingerprint, "store ", store_dir, " was built with model fingerprint ",
            hex64(m.model_fingerprint), " (", m.model_name, "), but this model (", model_name,
            ") has fingerprint ", hex64(model_fingerprint),
            ": KV and chunk ids of two models cannot mix; leave --model out to use the store's own model, or use "
            "another --store");
}

void require_settings(Manifest& m, const std::string& section, const json& wanted, const std::string& store_dir) {
  const auto it = m.settings.find(section);
  if (it == m.settings.end()) {
    m.settings[section] = wanted;
    return;
  }
  std::string differences;
  for (const auto& [key, value] : wanted.items()) {
    const json stored = it->contains(key) ? it->at(key) : json();
    if (stored != value) differences += "; " + key + " = " + stored.dump() + " in the store, " + value.dump() + " now";
  }
  for (const auto& [key, value] : it->items()) {
    if (!wanted.contains(key)) differences += "; " + key + " = " + value.dump() + " in the store, absent now";
  }
  KVF_CHECK(differences.empty(), "store ", store_dir, ": the ", section,
            " settings differ from those it was built with", differences,
            ". They shape the stored data, so they cannot change in place: use another --store");
}

void require_relative_store_path(const std::string& relative_path, const std::string& where) {
  const std::string problem = folder_path_problem(relative_path);
  KVF_CHECK(problem.empty(), where, " is '", relative_path, "': it ", problem,
            "; a store path is relative to the store directory");
}

namespace {

// Throws UnreadableFile built like fail()'s message.
template <typename... Parts>
[[noreturn]] void unreadable(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw UnreadableFile(os.str());
}

// A file that is not there lost its content (damage); any other failure to reach it is no fault of the content.
[[noreturn]] void cannot_reach(const std::string& path, const char* what, int err) {
  if (err == ENOENT) fail(path, ": ", what, ": ", std::strerror(err));
  unreadable(path, ": ", what, ": ", std::strerror(err));
}

// A descriptor of the checked path open for reading; O_NONBLOCK: should the file have turned into a FIFO since
// the check, opening it still returns at once.
int open_for_reading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) cannot_reach(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    unreadable(path, ": not a regular file");
  }
  return fd;
}

}  // namespace

std::string store_file_path(const std::string& store_dir, const std::string& relative_path) {
  require_relative_store_path(relative_path, "store " + store_dir + ": path");
  const fs::path full = fs::path(store_dir) / relative_path;
  std::error_code ec;
  const fs::path real = fs::canonical(full, ec);
  if (ec) cannot_reach(full.string(), "cannot open", ec.value());
  const fs::path root = fs::canonical(store_dir, ec);
  KVF_CHECK(!ec, "store ", store_dir, ": ", ec.message());
  const auto [in_root, in_real] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (in_root != root.end() || in_real == real.end())
    unreadable(full.string(), ": leads out of the store (to ", real.string(), ")");
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) cannot_reach(full.string(), "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) unreadable(full.string(), ": not a regular file");
  return full.string();
}

void require_readable(const std::string& store_dir, const std::string& relative_path) {
  ::close(open_for_reading(store_file_path(store_dir, relative_path)));
}

void commit_store_file(const std::string& store_dir, Manifest& m, PendingFile& file,
                       const std::string& relative_path) {
  CommittedFile now = describe_file(store_dir, fs::path(file.temp()).lexically_relative(store_dir).string());
  now.path = relative_path;
  std::error_code ec;
  if (fs::exists(fs::path(store_dir) / relative_path, ec)) {
    // What is on disk now, whatever the manifest says (an earlier replacement may have been cut short).
    const CommittedFile old = describe_file(store_dir, relative_path);
    CommittedFile both = now;
    both.replacing = true;
    both.previous_bytes = old.bytes;
    both.previous_xxh3 = old.xxh3;
    m.record_file(both);
    save_manifest(store_dir, m);
  }
  file.commit();
  m.record_file(now);
  save_manifest(store_dir, m);
}

CommittedFile describe_file(const std::string& store_dir, const std::string& relative_path) {
  const std::string path = store_file_path(store_dir, relative_path);
  const int fd = open_for_reading(path);
  // read(2) rather than a mapping: a disk's read error is then an error naming the file, not a SIGBUS.
  constexpr size_t kBlock = 1 << 20;
  std::vector<uint8_t> block(kBlock);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  CommittedFile f{relative_path, 0, 0};
  int err = 0;
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), kBlock);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : 0;
      break;
    }
    XXH3_64bits_update(state, block.data(), (size_t)n);
    f.bytes += (uint64_t)n;
  }
  f.xxh3 = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  ::close(fd);
  if (err) unreadable(path, ": cannot read: ", std::strerror(err));
  return f;
}

std::string checked_store_file(const std::string& store_dir, const Manifest& manifest,
                               const std::string& relative_path) {
  const auto it = std::find_if(manifest.files.begin(), manifest.files.end(),
                               [&](const CommittedFile& f) { return f.path == relative_path; });
  const std::string path = (fs::path(store_dir) / relative_path).string();
  KVF_CHECK(it != manifest.files.end(), path, ": not committed in the store's manifest; run the stage that writes it");
  const CommittedFile now = describe_file(store_dir, relative_path);
  KVF_CHECK(it->accepts(now.bytes, now.xxh3), path, ": damaged: ", now.bytes, " bytes with xxh3 ", hex64(now.xxh3),
            ", the manifest records ", it->bytes, " bytes with xxh3 ", hex64(it->xxh3),
            "; `kvprep verify --repair --store ", store_dir, "` drops it and names the stage that rebuilds it");
  return path;
}

std::string reader_table_file(const std::string& store_dir, const Manifest& m, const std::string& table) {
  const std::string& published = table == kIndexFile ? m.published.index : m.published.chunks;
  const CommittedFile *pinned = m.published.number > 0 ? m.find_file(published) : nullptr, *working = m.find_file(table);
  if (!pinned) return checked_store_file(store_dir, m, table);
  // While no update is under way the working file is the same table under its own name, and damage to it is
  // damage to the store: it is checked too (a writer that replaced it since the manifest was read makes the
  // check fail under a newer manifest, which is no damage).
  if (working && working->bytes == pinned->bytes && working->xxh3 == pinned->xxh3) {
    try {
      checked_store_file(store_dir, m, table);
    } catch (const Error&) {
      if (!has_manifest(store_dir) || same_commit(m, load_manifest(store_dir))) throw;
    }
  }
  return checked_store_file(store_dir, m, published);
}

bool same_commit(const Manifest& a, const Manifest& b) {
  const auto same_file = [](const CommittedFile& x, const CommittedFile& y) {
    return x.path == y.path && x.bytes == y.bytes && x.xxh3 == y.xxh3 && x.replacing == y.replacing;
  };
  const auto same_stage = [](const StageRecord& x, const StageRecord& y) {
    return x.stage == y.stage && x.completed_at == y.completed_at && x.inputs_hash == y.inputs_hash &&
           x.counts == y.counts;
  };
  return a.published.number == b.published.number && a.settings == b.settings &&
         std::equal(a.files.begin(), a.files.end(), b.files.begin(), b.files.end(), same_file) &&
         std::equal(a.stages.begin(), a.stages.end(), b.stages.begin(), b.stages.end(), same_stage);
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace kvf
