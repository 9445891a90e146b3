#include "compress/compress_stage.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "backend/backend.h"
#include "compress/anchors.h"
#include "core/error.h"
#include "io/gguf.h"
#include "model/decoder.h"
#include "model/fingerprint.h"
#include "prep/chunk_kv.h"
#include "prep/precompute_view.h"
#include "prep/retrieval_stages.h"
#include "prep/shard_sink.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "text/bpe_tokenizer.h"
#include "text/preset_tokens.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kSharingSection = "layer_sharing";

bool is_prefill_mode(const std::string& mode) { return mode == "independent" || mode == "similarity"; }

void check_mode_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char ch : name) ok = ok && (std::isalnum((unsigned char)ch) || ch == '_' || ch == '-');
  KVF_CHECK(ok, "--to '", name, "': a KV mode name is 1-64 letters, digits, '_' or '-'");
  KVF_CHECK(!is_prefill_mode(name) && name != "system", "--to '", name,
            "' is a mode kvprep prefill writes; give the compressed mode its own name (e.g. sim-a25-int8)");
}

Manifest load_store_manifest(const std::string& store_dir) {
  KVF_CHECK(has_manifest(store_dir), store_dir, ": not a kvfuse store (no manifest.json); build one with `kvprep run`");
  return load_manifest(store_dir);
}

// Loads the manifest and the model, checking they belong together.
struct StoreModel {
  Manifest manifest;
  std::shared_ptr<const gguf::File> file;
  uint64_t fingerprint = 0;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Decoder> decoder;
  ChunkTable chunks;

  StoreModel(const std::string& store_dir, const std::string& model_path)
      : manifest(load_store_manifest(store_dir)),
        file(gguf::File::open(model_path)),
        fingerprint(model_fingerprint(*file)),
        backend(make_cpu_backend()),
        chunks(ChunkTable::read((fs::path(store_dir) / kChunksFile).string())) {
    require_same_model(manifest, fingerprint, fs::path(model_path).filename().string(), store_dir);
    decoder = Decoder::load_gguf(model_path, *backend);
  }
};

json sharing_record(const ShareSearchStageOptions& o, const ShareSearchResult& r) {
  return {{"layers", o.search.layers},     {"threshold", o.search.threshold}, {"samples", o.samples},
          {"sample_tokens", o.sample_tokens}, {"sources", r.sources},          {"similarity", r.similarity},
          {"shared", r.shared}};
}

ShareSearchResult search_in_store(const ShareSearchStageOptions& o, StoreModel& s) {
  const auto passages = calibration_passages(s.chunks, o.samples, o.sample_tokens);
  return search_layer_sharing(*s.decoder, passages, o.search);
}

// The sharing sources for these options: the store's recorded search when it was made with them, else a new
// search (recorded).
std::vector<int32_t> sharing_sources(const ShareSearchStageOptions& o, StoreModel& s) {
  const auto it = s.manifest.settings.find(kSharingSection);
  if (it != s.manifest.settings.end()) {
    const json& r = *it;
    if (r.value("layers", -1) == o.search.layers && r.value("threshold", -1.0) == o.search.threshold &&
        r.value("samples", -1) == o.samples && r.value("sample_tokens", -1) == o.sample_tokens)
      return r.at("sources").get<std::vector<int32_t>>();
  }
  const ShareSearchResult r = search_in_store(o, s);
  s.manifest.settings[kSharingSection] = sharing_record(o, r);
  save_manifest(o.store_dir, s.manifest);
  return r.sources;
}

// The rows of `kv` at the given in-chunk positions (each present once).
HostKv keep_positions(const HostKv& kv, const std::vector<int32_t>& positions, int64_t row_elems) {
  HostKv out;
  size_t next = 0;
  for (int64_t r = 0; r < kv.rows && next < positions.size(); ++r) {
    if (kv.positions[r] != positions[next]) continue;
    out.k.insert(out.k.end(), kv.k.begin() + r * row_elems, kv.k.begin() + (r + 1) * row_elems);
    out.v.insert(out.v.end(), kv.v.begin() + r * row_elems, kv.v.begin() + (r + 1) * row_elems);
    out.positions.push_back(kv.positions[r]);
    ++next;
  }
  KVF_CHECK(next == positions.size(), "compress: the source KV lacks the row at in-chunk position ",
            next < positions.size() ? positions[next] : -1);
  out.rows = (int64_t)out.positions.size();
  return out;
}

// Only the stored layers in `keep` (ascending stored-layer indices), in that order.
HostKv keep_layers(const HostKv& kv, int stored_layers, const std::vector<int32_t>& keep, int64_t layer_elems) {
  HostKv out;
  out.rows = kv.rows;
  out.positions = kv.positions;
  for (int64_t r = 0; r < kv.rows; ++r)
    for (int32_t l : keep) {
      const int64_t at = (r * stored_layers + l) * layer_elems;
      out.k.insert(out.k.end(), kv.k.begin() + at, kv.k.begin() + at + layer_elems);
      out.v.insert(out.v.end(), kv.v.begin() + at, kv.v.begin() + at + layer_elems);
    }
  return out;
}

// Rows [begin, begin + count) of a segment, positions moved by `shift` (tensors shared).
KvSegment segment_rows(const KvSegment& seg, int64_t begin, int64_t count, int32_t shift) {
  KvSegment out;
  for (size_t l = 0; l < seg.k.size(); ++l) {
    out.k.push_back(seg.k[l].rows(begin, count));
    out.v.push_back(seg.v[l].rows(begin, count));
  }
  for (int64_t r = begin; r < begin + count; ++r) out.positions.push_back(seg.positions[r] + shift);
  return out;
}

// append: the anchors of one chunk, segment by segment (each segment's anchors attend to S, the earlier
// anchors and the segment's own rows, all from the source KV).
HostKv append_anchors(const Decoder& d, const KvSegment& system, const KvSegment& chunk_kv, int32_t n_tokens,
                      const std::vector<int32_t>& anchor_ids, int segment, double fraction) {
  Backend& b = d.backend();
  const int32_t s_len = (int32_t)system.rows();
  std::vector<KvSegment> anchors;  // placed at s_len + their stored positions
  HostKv out;
  for (const AnchorSegment& s : anchor_segments(n_tokens, segment, fraction)) {
    KVF_CHECK(chunk_kv.rows() == n_tokens && chunk_kv.positions[s.begin] == s.begin, "compress: append needs every "
              "token's row in the source KV");
    const KvSegment own = segment_rows(chunk_kv, s.begin, s.end - s.begin, s_len);
    ForwardRequest r;
    r.view.push_back(&system);
    for (const KvSegment& a : anchors) r.view.push_back(&a);
    r.view.push_back(&own);
    for (int32_t k = 0; k < s.keep; ++k) {
      r.tokens.push_back(anchor_ids[(size_t)k % anchor_ids.size()]);
      r.positions.push_back(s_len + s.end + k);  // right after the segment, where nothing else in the view is
    }
    r.return_kv = true;
    KvSegment kv = d.forward(r).kv;
    kv.positions.clear();
    for (int32_t p : appended_anchor_positions(s)) kv.positions.push_back(s_len + p);
    HostKv host = segment_to_host(kv, b);
    for (int32_t& p : host.positions) p -= s_len;
    out.k.insert(out.k.end(), host.k.begin(), host.k.end());
    out.v.insert(out.v.end(), host.v.begin(), host.v.end());
    out.positions.insert(out.positions.end(), host.positions.begin(), host.positions.end());
    anchors.push_back(std::move(kv));
  }
  out.rows = (int64_t)out.positions.size();
  return out;
}

}  // namespace

ShareSearchResult run_share_search(const ShareSearchStageOptions& o) {
  StoreModel s(o.store_dir, o.model_path);
  const ShareSearchResult r = search_in_store(o, s);
  s.manifest.settings[kSharingSection] = sharing_record(o, r);
  save_manifest(o.store_dir, s.manifest);
  return r;
}

CompressStageResult run_compress_stage(const CompressStageOptions& o) {
  const auto t0 = Clock::now();
  check_mode_name(o.to);
  KVF_CHECK(o.from != o.to, "--from and --to are both '", o.from, "'");
  const bool anchors = o.anchors > 0;
  KVF_CHECK(o.anchors >= 0 && o.anchors <= 1, "--anchors must be in (0, 1], got ", o.anchors);
  KVF_CHECK(o.anchor_mode == "select" || o.anchor_mode == "append", "--anchor-mode must be select or append, got '",
            o.anchor_mode, "'");
  const AnchorScore score_kind = anchor_score_from_name(o.anchor_score);
  KVF_CHECK(o.quant.empty() || o.quant == "int8", "--quant must be int8, got '", o.quant, "'");
  KVF_CHECK(anchors || o.share_layers > 0 || !o.quant.empty(), "compress: nothing to do; give --anchors, "
            "--share-layers or --quant");
  StoreModel s(o.store_dir, o.model_path);
  Manifest& m = s.manifest;
  KVF_CHECK(kv_mode_completed(m, o.from), o.store_dir, ": no '", o.from, "' KV to compress (stored modes are "
            "listed by `kvprep inspect`)");
  const KvModeReader source(o.store_dir, m, o.from, s.fingerprint);
  const KvShardLayout& from_layout = source.layout();
  const std::string from_section = "compress-" + o.from;
  const json from_recipe = m.settings.contains(from_section) ? m.settings.at(from_section) : json::object();
  const std::string base = from_recipe.value("base", o.from);  // the prefill mode the KV comes from
  if (anchors)
    KVF_CHECK(from_recipe.value("anchors", 0.0) == 0.0, "--anchors needs every token's row, but '", o.from,
              "' already keeps anchors only; compress from '", base, "'");
  const LlamaConfig& c = s.decoder->config();
  const std::vector<int32_t> from_sources = sources_of_layer_map(from_layout.layer_map);
  std::vector<int32_t> sources = from_sources;
  if (o.share_layers > 0) {
    for (int l = 0; l < c.n_layers; ++l)
      KVF_CHECK(sources[l] == l, "--share-layers needs every layer's KV, but '", o.from, "' already shares layers");
    ShareSearchStageOptions so;
    so.store_dir = o.store_dir;
    so.model_path = o.model_path;
    so.search = {o.share_layers, o.share_threshold, o.progress};
    so.samples = o.share_samples;
    so.sample_tokens = o.share_sample_tokens;
    sources = sharing_sources(so, s);
  }

  const std::string system_text = m.settings.at("prefill").at("system_prompt").get<std::string>();
  const BpeTokenizer tokenizer(bpe_vocabulary_from_gguf(*s.file));
  const std::vector<int32_t> s_tokens = tokenizer.encode(system_text, false, true);
  // append: the k-th anchor of a segment is the preset's k-th id, the list repeating when it is shorter.
  const std::vector<int32_t> anchor_ids = preset_token_list(*s.file, kAnchorTokensKey, tokenizer);

  // The new mode's layout: the source layers only, in order; each layer maps to its source's stored layer.
  std::vector<int32_t> kept_layers;  // stored layers of `from` that remain
  for (int l = 0; l < c.n_layers; ++l)
    if (sources[l] == l) kept_layers.push_back(from_layout.layer_map[l]);
  KvShardLayout layout = from_layout;
  layout.mode = o.to;
  layout.stored_layers = (int)kept_layers.size();
  for (int l = 0; l < c.n_layers; ++l)
    layout.layer_map[l] = (int32_t)(std::find(kept_layers.begin(), kept_layers.end(),
                                              from_layout.layer_map[sources[l]]) - kept_layers.begin());
  if (o.quant == "int8") layout.dtype = KvDtype::Int8;

  json recipe = {{"from", o.from},
                 {"base", base},
                 {"anchors", anchors ? o.anchors : from_recipe.value("anchors", 0.0)},
                 {"anchor_mode", anchors ? o.anchor_mode : from_recipe.value("anchor_mode", "")},
                 {"segment", anchors ? o.segment : from_recipe.value("segment", 0)},
                 {"layer_sources", sources},
                 {"quant", layout.dtype == KvDtype::Int8 ? "int8" : ""}};
  if (anchors && o.anchor_mode == "append") recipe["anchor_token_ids"] = anchor_ids;
  if (anchors && o.anchor_mode == "select") recipe["anchor_score"] = o.anchor_score;
  if (!anchors && from_recipe.contains("anchor_score")) recipe["anchor_score"] = from_recipe["anchor_score"];
  require_settings(m, "compress-" + o.to, recipe, o.store_dir);

  const KvModeReader existing(o.store_dir, m, o.to, s.fingerprint);
  const auto needs = [&](size_t row) {
    const uint64_t id = s.chunks.chunks()[row].id;
    return source.contains(id) && !existing.contains(id);
  };
  std::vector<std::pair<size_t, size_t>> groups;
  uint64_t missing = 0;
  for (const auto& [begin, end] : fixed_chunk_batches(s.chunks, o.batch_tokens)) {
    uint64_t here = 0;
    for (size_t row = begin; row < end; ++row) here += needs(row);
    if (here) groups.push_back({begin, end});
    missing += here;
  }
  CompressStageResult res;
  res.sources = sources;
  const std::string stage = "compress-" + o.to;
  if (missing == 0 && m.find_stage(stage)) {
    res.unchanged = true;
    res.chunks = existing.chunks();
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }

  // select re-runs the base mode's precompute to see the attention each token received there.
  std::unique_ptr<PrecomputeView> view;
  if (anchors) {
    const int top_n = base == "similarity" ? m.settings.at("prefill_similarity").at("top_n").get<int>() : 0;
    view = std::make_unique<PrecomputeView>(o.store_dir, m, s.chunks, base, top_n, s.fingerprint, s_tokens,
                                            c.context_length, *s.backend, o.neighbor_cache_bytes);
  }
  const int64_t layer_elems = (int64_t)from_layout.kv_heads * from_layout.head_dim;
  // append computes anchors with the model the source KV belongs to (its layer sharing included) and gets every
  // model layer back; the source's stored layers are its source layers, in order.
  const std::unique_ptr<Decoder> source_model = s.decoder->with_kv_sources(from_sources);
  std::vector<int32_t> from_source_layers;
  for (int l = 0; l < c.n_layers; ++l)
    if (from_sources[l] == l) from_source_layers.push_back(l);
  const double source_row_bytes = from_layout.bytes_per_row();
  ShardSink sink(o.store_dir, m, layout, o.shard_bytes);
  Progress progress("compress " + o.to, "chunks", missing, o.progress);
  for (const auto& [begin, end] : groups) {
    std::vector<std::vector<int32_t>> kept(end - begin);  // select: positions kept per chunk
    if (anchors && o.anchor_mode == "select") {
      std::vector<size_t> rows;
      for (size_t row = begin; row < end; ++row) rows.push_back(row);
      std::vector<std::vector<KvSegment>> placed;
      std::vector<ForwardRequest> batch = view->chunk_requests(rows, placed);
      for (ForwardRequest& r : batch) {
        for (int l = 0; l < c.n_layers; ++l) r.probe_layers.push_back(l);
        for (size_t i = 0; i < r.tokens.size(); ++i) r.probe_rows.push_back((int32_t)i);
      }
      const std::vector<ForwardResult> out = s.decoder->forward(batch);
      for (size_t i = 0; i < out.size(); ++i) {
        int64_t view_rows = 0;
        for (const KvSegment* seg : batch[i].view) view_rows += seg->rows();
        kept[i] = select_anchor_positions(
            received_attention(out[i].attn_colsum, view_rows, (int64_t)batch[i].tokens.size(), score_kind), o.segment,
            o.anchors);
      }
    }
    for (size_t row = begin; row < end; ++row) {
      if (!needs(row)) continue;
      const ChunkRecord& chunk = s.chunks.chunks()[row];
      HostKv kv = source.read(chunk.id);
      res.source_bytes += (uint64_t)(kv.rows * source_row_bytes);
      if (anchors && o.anchor_mode == "select") {
        kv = keep_positions(kv, kept[row - begin], (int64_t)from_layout.stored_layers * layer_elems);
      } else if (anchors) {
        const KvSegment chunk_kv = host_to_segment(kv, from_layout, *s.backend, kv.positions);
        kv = append_anchors(*source_model, view->system(), chunk_kv, (int32_t)chunk.tokens.size(), anchor_ids,
                            o.segment, o.anchors);
        kv = keep_layers(kv, c.n_layers, from_source_layers, layer_elems);  // back to the source's stored layers
      }
      if ((int)kept_layers.size() != from_layout.stored_layers)
        kv = keep_layers(kv, from_layout.stored_layers, kept_layers, layer_elems);
      sink.add(chunk.id, kv, source.context(chunk.id));
      res.tokens += chunk.tokens.size();
      res.rows += (uint64_t)kv.rows;
      ++res.computed;
      progress.advance(1);
    }
  }
  progress.finish();
  res.chunks = existing.chunks() + res.computed;  // the chunks computed were those the mode lacked
  sink.finish_stage(stage, {{"chunks", res.chunks}, {"computed", res.computed}, {"tokens", res.tokens},
                            {"rows", res.rows}});
  res.shards_written = sink.written();
  res.stored_bytes = sink.bytes();
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace kvf
