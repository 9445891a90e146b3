#include "compress/compress_stage.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "backend/backend.h"
#include "compress/anchors.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "io/gguf.h"
#include "io/hf_folder.h"
#include "model/decoder.h"
#include "model/fingerprint.h"
#include "model/gguf_tokenizer.h"
#include "prep/precompute_view.h"
#include "prep/prefill_stage.h"
#include "prep/retrieval_stages.h"
#include "prep/shard_sink.h"
#include "store/chunk_kv.h"
#include "store/chunk_table.h"
#include "store/manifest.h"
#include "text/tokenizer.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kSharingSection = "layer_sharing";

void check_mode_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char ch : name) ok = ok && (std::isalnum((unsigned char)ch) || ch == '_' || ch == '-');
  KVF_CHECK(ok, "--to '", name, "': a KV mode name is 1-64 letters, digits, '_' or '-'");
  KVF_CHECK(!is_prefill_mode(name) && name != kSystemKvMode, "--to '", name,
            "' is a mode kvprep prefill writes; give the compressed mode its own name (e.g. sim-a25-int8)");
}

Manifest load_store_manifest(const std::string& store_dir) {
  KVF_CHECK(has_manifest(store_dir), store_dir, ": not a kvfuse store (no manifest.json); build one with `kvprep run`");
  return load_manifest(store_dir);
}

// The compute mode the store's KV was made in (kvprep prefill records it; stores older than the setting: f32), so
// that anchors are computed as the KV they join was.
ComputeMode store_compute_mode(const Manifest& m) {
  const auto it = m.settings.find("prefill");
  return compute_mode_from_name(it != m.settings.end() ? it->value("compute", "f32") : "f32");
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
        file(open_decoder_file(model_path)),
        fingerprint(model_fingerprint(*file)),
        backend(make_cpu_backend()),
        chunks(ChunkTable::read((fs::path(store_dir) / kChunksFile).string())) {
    require_same_model(manifest, fingerprint, fs::path(model_path).filename().string(), store_dir);
    decoder = Decoder::load(model_path, *backend, store_compute_mode(manifest));
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
HostKv keep_positions(const HostKv& kv, const std::vector<int32_t>& positions) {
  const int64_t row_elems = kv.layers * kv.width;
  HostKv out;
  out.layers = kv.layers;
  out.width = kv.width;
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

// Only the layers in `keep` (ascending layer indices of `kv`), in that order.
HostKv keep_layers(const HostKv& kv, const std::vector<int32_t>& keep) {
  HostKv out;
  out.rows = kv.rows;
  out.layers = (int)keep.size();
  out.width = kv.width;
  out.positions = kv.positions;
  for (int64_t r = 0; r < kv.rows; ++r)
    for (int32_t l : keep) {
      const int64_t at = (r * kv.layers + l) * kv.width;
      out.k.insert(out.k.end(), kv.k.begin() + at, kv.k.begin() + at + kv.width);
      out.v.insert(out.v.end(), kv.v.begin() + at, kv.v.begin() + at + kv.width);
    }
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
    const KvSegment own = placed_at(chunk_kv.slice(s.begin, s.end - s.begin), s_len);
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
    out.layers = host.layers;
    out.width = host.width;
    out.k.insert(out.k.end(), host.k.begin(), host.k.end());
    out.v.insert(out.v.end(), host.v.begin(), host.v.end());
    out.positions.insert(out.positions.end(), host.positions.begin(), host.positions.end());
    anchors.push_back(std::move(kv));
  }
  out.rows = (int64_t)out.positions.size();
  return out;
}

}  // namespace

void check_compress_options(const CompressStageOptions& o) {
  check_mode_name(o.to);
  KVF_CHECK(o.from != o.to, "--from and --to are both '", o.from, "'");
  // Written so that NaN fails every one of them (each comparison with NaN is false).
  KVF_CHECK(o.anchors >= 0 && o.anchors <= 1, "--anchors must be in (0, 1], got ", o.anchors);
  KVF_CHECK(o.segment >= 1 && o.segment <= 100000, "--segment must be 1 to 100000 tokens, got ", o.segment);
  KVF_CHECK(o.share_layers >= 0 && o.share_layers <= (1 << 16), "--share-layers must be 0 to 65536, got ",
            o.share_layers);
  KVF_CHECK(o.share_threshold >= -1 && o.share_threshold <= 1,
            "--share-threshold must be a cosine similarity in [-1, 1], got ", o.share_threshold);
  KVF_CHECK(o.share_samples >= 1 && o.share_samples <= (1 << 20), "--share-samples must be 1 to 1048576, got ",
            o.share_samples);
  KVF_CHECK(o.share_sample_tokens >= 1 && o.share_sample_tokens <= (1 << 20),
            "--share-sample-tokens must be 1 to 1048576, got ", o.share_sample_tokens);
  KVF_CHECK(o.quant_group >= 4 && o.quant_group <= 4096, "--quant-group must be 4 to 4096, got ", o.quant_group);
  KVF_CHECK(o.keep_first >= 0 && o.keep_first <= (1 << 20), "--keep-first must be 0 to 1048576 rows, got ",
            o.keep_first);
  KVF_CHECK(o.batch_tokens >= 1 && o.batch_tokens <= (1 << 24), "--batch-tokens must be 1 to 16777216, got ",
            o.batch_tokens);
  KVF_CHECK(o.shard_bytes > 0, "--shard-mb must be positive");
  KVF_CHECK(o.anchor_mode == "select" || o.anchor_mode == "append", "--anchor-mode must be select or append, got '",
            o.anchor_mode, "'");
  anchor_score_from_name(o.anchor_score);  // throws naming a bad value
  KVF_CHECK(o.quant.empty() || o.quant == "int8" || o.quant == "int4" || o.quant == "int3" || o.quant == "int2",
            "--quant must be int8, int4, int3 or int2, got '", o.quant, "'");
  KVF_CHECK(o.v_levels == "uniform" || o.v_levels == "nf", "--v-levels must be uniform or nf, got '", o.v_levels,
            "'");
  const bool low_bit = o.quant == "int4" || o.quant == "int3" || o.quant == "int2";
  KVF_CHECK(!o.rotate || low_bit, "--rotate needs --quant int4, int3 or int2 (got ",
            o.quant.empty() ? "no --quant" : "--quant " + o.quant, ")");
  KVF_CHECK(o.v_levels == "uniform" || low_bit, "--v-levels ", o.v_levels, " needs --quant int4, int3 or int2 (got ",
            o.quant.empty() ? "no --quant" : "--quant " + o.quant, ")");
  KVF_CHECK(o.anchors > 0 || o.share_layers > 0 || !o.quant.empty() || o.entropy.codec != h5::Compression::Codec::None,
            "compress: nothing to do; give --anchors, --share-layers, --quant or --entropy");
}

namespace {

// One kvprep compress run: from the source mode's KV to the new mode's, chunk group by chunk group.
class CompressJob {
 public:
  CompressJob(const CompressStageOptions& o)
      : o_(o),
        s_(o.store_dir, o.model_path),
        c_(s_.decoder->config()),
        source_(open_source(o, s_)),
        from_layout_(source_.layout()),
        anchors_(o.anchors > 0),
        select_(anchors_ && o.anchor_mode == "select"),
        stage_("compress-" + o.to) {}

  CompressStageResult run() {
    read_source_recipe();
    choose_layer_sources();
    read_prompt_tokens();
    make_target_layout();
    record_recipe();
    const KvModeReader existing(o_.store_dir, s_.manifest, o_.to, s_.fingerprint);
    const uint64_t missing = plan_groups(existing);
    res_.sources = sources_;
    if (missing == 0 && s_.manifest.find_stage(stage_)) {
      res_.unchanged = true;
      res_.chunks = existing.chunks();
      return res_;
    }
    if (anchors_) open_precompute_view();
    ShardSink sink(o_.store_dir, s_.manifest, layout_, o_.shard_bytes, o_.entropy);
    Progress progress("compress " + o_.to, "chunks", missing, o_.progress);
    for (const auto& [begin, end] : groups_) {
      const std::vector<std::vector<int32_t>> kept = select_ ? select_anchors(begin, end) : kNone;
      for (size_t row = begin; row < end; ++row) {
        if (!needs(row, existing)) continue;
        sink.add(s_.chunks.chunks()[row].id, compress_chunk(row, select_ ? &kept[row - begin] : nullptr),
                 source_.context(s_.chunks.chunks()[row].id));
        progress.advance(1);
      }
    }
    progress.finish();
    res_.chunks = existing.chunks() + res_.computed;  // the chunks computed were those the mode lacked
    sink.finish_stage(stage_, {{"chunks", res_.chunks}, {"computed", res_.computed}, {"tokens", res_.tokens},
                               {"rows", res_.rows}});
    res_.shards_written = sink.written();
    res_.stored_bytes = sink.bytes();
    res_.file_bytes = sink.file_bytes();
    return res_;
  }

 private:
  static KvModeReader open_source(const CompressStageOptions& o, StoreModel& s) {
    KVF_CHECK(kv_mode_completed(s.manifest, o.from), o.store_dir, ": no '", o.from, "' KV to compress (stored modes "
              "are listed by `kvprep inspect`)");
    return KvModeReader(o.store_dir, s.manifest, o.from, s.fingerprint);
  }

  // What the source mode already is: its own recipe when it is compressed, and the prefill mode it comes from.
  void read_source_recipe() {
    const std::string section = "compress-" + o_.from;
    from_recipe_ = s_.manifest.settings.contains(section) ? s_.manifest.settings.at(section) : json::object();
    base_ = from_recipe_.value("base", o_.from);
    if (anchors_)
      KVF_CHECK(from_recipe_.value("anchors", 0.0) == 0.0, "--anchors needs every token's row, but '", o_.from,
                "' already keeps anchors only; compress from '", base_, "'");
  }

  // The KV source map of the new mode: the source's, or a layer-sharing search's (recorded in the store).
  void choose_layer_sources() {
    from_sources_ = kv_sources_of_layout(from_layout_, s_.decoder->kv_sources());
    sources_ = from_sources_;
    if (o_.share_layers == 0) return;
    KVF_CHECK(!c_.condensed.active(), "--share-layers: a condensed-KV (LCKV) model reads the KV layers its config "
              "names; they cannot be shared further");
    for (int l = 0; l < c_.n_layers; ++l)
      KVF_CHECK(sources_[l] == l, "--share-layers needs every layer's KV, but '", o_.from, "' already shares layers");
    ShareSearchStageOptions so;
    so.store_dir = o_.store_dir;
    so.model_path = o_.model_path;
    so.search = {o_.share_layers, o_.share_threshold, o_.progress};
    so.samples = o_.share_samples;
    so.sample_tokens = o_.share_sample_tokens;
    sources_ = sharing_sources(so, s_);
  }

  // S's tokens (the view anchors are computed after) and, for append, the anchor token ids: the k-th anchor of a
  // segment is the preset's k-th id, the list repeating when it is shorter.
  void read_prompt_tokens() {
    const std::string system_text = s_.manifest.settings.at("prefill").at("system_prompt").get<std::string>();
    const std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_gguf(*s_.file);
    s_tokens_ = tokenizer->encode(system_text, false, true);
    anchor_ids_ = preset_token_list(*s_.file, kAnchorTokensKey, *tokenizer);
  }

  // The new mode's layout: the source layers only, in order; each layer maps to its source's stored layer.
  void make_target_layout() {
    for (int l = 0; l < c_.n_layers; ++l)
      if (sources_[l] == l) kept_layers_.push_back(from_layout_.layer_map[l]);
    layout_ = from_layout_;
    layout_.mode = o_.to;
    layout_.stored_layers = (int)kept_layers_.size();
    for (int l = 0; l < c_.n_layers; ++l)
      layout_.layer_map[l] = (int32_t)(std::find(kept_layers_.begin(), kept_layers_.end(),
                                                 from_layout_.layer_map[sources_[l]]) - kept_layers_.begin());
    if (!o_.quant.empty()) layout_.dtype = parse_kv_dtype(o_.quant, "--quant");
    if (!o_.quant.empty() && layout_.low_bit()) {
      layout_.quant_group = o_.quant_group;
      layout_.keep_first = o_.keep_first;
      layout_.rotate = o_.rotate;
      layout_.v_levels = o_.v_levels == "nf" ? LowBitLevels::NormalFloat : LowBitLevels::Uniform;
      check_low_bit_spec(layout_.low_bit_spec(), layout_.head_dim,
                         "--quant " + o_.quant + (o_.rotate ? " --rotate" : ""));
    }
    if (!layout_.low_bit()) layout_.rotate = false, layout_.v_levels = LowBitLevels::Uniform;
    for (int l = 0; l < c_.n_layers; ++l)
      if (from_sources_[l] == l) from_source_layers_.push_back(l);
  }

  // The recipe kvrun reads; a rerun with other options is refused (require_settings names the difference).
  void record_recipe() {
    json recipe = {{"from", o_.from},
                   {"base", base_},
                   {"anchors", anchors_ ? o_.anchors : from_recipe_.value("anchors", 0.0)},
                   {"anchor_mode", anchors_ ? o_.anchor_mode : from_recipe_.value("anchor_mode", "")},
                   {"segment", anchors_ ? o_.segment : from_recipe_.value("segment", 0)},
                   {"layer_sources", sources_},
                   {"quant", layout_.dtype == KvDtype::F16 || layout_.dtype == KvDtype::BF16
                                 ? ""
                                 : kv_dtype_name(layout_.dtype)}};
    if (layout_.low_bit()) {
      recipe["quant_group"] = layout_.quant_group;
      recipe["keep_first"] = layout_.keep_first;
      if (layout_.rotate || layout_.v_levels != LowBitLevels::Uniform) {  // absent: the first codec (older stores)
        recipe["rotate"] = layout_.rotate;
        recipe["v_levels"] = low_bit_levels_name(layout_.v_levels);
      }
    }
    if (anchors_ && !select_) recipe["anchor_token_ids"] = anchor_ids_;
    if (select_) recipe["anchor_score"] = o_.anchor_score;
    if (!anchors_ && from_recipe_.contains("anchor_score")) recipe["anchor_score"] = from_recipe_["anchor_score"];
    require_settings(s_.manifest, stage_, recipe, o_.store_dir);
  }

  bool needs(size_t row, const KvModeReader& existing) const {
    const uint64_t id = s_.chunks.chunks()[row].id;
    return source_.contains(id) && !existing.contains(id);
  }

  // The fixed chunk groups holding a chunk the new mode lacks; returns how many chunks that is.
  uint64_t plan_groups(const KvModeReader& existing) {
    uint64_t missing = 0;
    for (const auto& [begin, end] : fixed_chunk_batches(s_.chunks, o_.batch_tokens)) {
      uint64_t here = 0;
      for (size_t row = begin; row < end; ++row) here += needs(row, existing);
      if (here) groups_.push_back({begin, end});
      missing += here;
    }
    return missing;
  }

  // Anchors are computed over the base mode's precompute view (select re-runs it to see the attention each
  // token received there; append places its anchors after S).
  void open_precompute_view() {
    const Manifest& m = s_.manifest;
    const int top_n = base_ == "similarity" ? m.settings.at("prefill_similarity").at("top_n").get<int>() : 0;
    view_ = std::make_unique<PrecomputeView>(o_.store_dir, m, s_.chunks, base_, top_n, stored_neighbor_order(m),
                                             s_.fingerprint, s_tokens_, c_.context_length, *s_.backend,
                                             o_.neighbor_cache_bytes);
    // append computes with the model the source KV belongs to (its layer sharing included).
    source_model_ = s_.decoder->with_kv_sources(from_sources_);
  }

  // select: the in-chunk positions each chunk of the group keeps, from the attention its tokens received.
  std::vector<std::vector<int32_t>> select_anchors(size_t begin, size_t end) {
    if (!o_.recompute_scores) {  // scores recorded by `prefill --anchor-scores` for every chunk of the group
      std::vector<std::vector<int32_t>> kept;
      const AnchorScore kind = anchor_score_from_name(o_.anchor_score);
      for (size_t row = begin; row < end; ++row) {
        const uint64_t id = s_.chunks.chunks()[row].id;
        if (!source_.contains(id)) {  // nothing to compress: no anchors needed
          kept.emplace_back();
          continue;
        }
        std::vector<double> sums = source_.anchor_scores(id);
        if (sums.empty()) break;
        kept.push_back(select_anchor_positions(anchor_scores_as(std::move(sums), kind), o_.segment, o_.anchors));
      }
      if (kept.size() == end - begin) {
        res_.recorded_scores += kept.size();
        return kept;
      }
    }
    std::vector<size_t> rows;
    for (size_t row = begin; row < end; ++row) rows.push_back(row);
    std::vector<std::vector<KvSegment>> placed;
    std::vector<ForwardRequest> batch = view_->chunk_requests(rows, placed);
    for (ForwardRequest& r : batch) {
      for (int l = 0; l < c_.n_layers; ++l) r.probe_layers.push_back(l);
      for (size_t i = 0; i < r.tokens.size(); ++i) r.probe_rows.push_back((int32_t)i);
    }
    const std::vector<ForwardResult> out = s_.decoder->forward(batch);
    const AnchorScore score_kind = anchor_score_from_name(o_.anchor_score);
    std::vector<std::vector<int32_t>> kept(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t view_rows = 0;
      for (const KvSegment* seg : batch[i].view) view_rows += seg->rows();
      kept[i] = select_anchor_positions(
          received_attention(out[i].attn_colsum, view_rows, (int64_t)batch[i].tokens.size(), score_kind), o_.segment,
          o_.anchors);
    }
    return kept;
  }

  // One chunk's KV in the new mode: anchors (kept positions or appended tokens), then the layers kept.
  HostKv compress_chunk(size_t row, const std::vector<int32_t>* selected) {
    const ChunkRecord& chunk = s_.chunks.chunks()[row];
    HostKv kv = source_.read(chunk.id);
    res_.source_bytes += (uint64_t)(kv.rows * from_layout_.bytes_per_row());
    if (selected) {
      kv = keep_positions(kv, *selected);
    } else if (anchors_) {
      const KvSegment chunk_kv = host_to_segment(kv, from_layout_, *s_.backend, kv.positions);
      kv = append_anchors(*source_model_, view_->system(), chunk_kv, (int32_t)chunk.tokens.size(), anchor_ids_,
                          o_.segment, o_.anchors);
      kv = keep_layers(kv, from_source_layers_);  // every model layer back to the source's stored layers
    }
    if ((int)kept_layers_.size() != from_layout_.stored_layers) kv = keep_layers(kv, kept_layers_);
    res_.tokens += chunk.tokens.size();
    res_.rows += (uint64_t)kv.rows;
    ++res_.computed;
    return kv;
  }

  inline static const std::vector<std::vector<int32_t>> kNone{};

  const CompressStageOptions& o_;
  StoreModel s_;
  const LlamaConfig& c_;
  const KvModeReader source_;
  const KvShardLayout& from_layout_;
  const bool anchors_, select_;
  const std::string stage_;

  json from_recipe_;
  std::string base_;                          // the prefill mode the source KV comes from
  std::vector<int32_t> from_sources_, sources_;  // KV source maps of the source and the new mode
  std::vector<int32_t> from_source_layers_;   // the source's stored layers, as model layers
  std::vector<int32_t> kept_layers_;          // stored layers of the source that the new mode keeps
  KvShardLayout layout_;
  std::vector<int32_t> s_tokens_, anchor_ids_;
  std::vector<std::pair<size_t, size_t>> groups_;
  std::unique_ptr<PrecomputeView> view_;
  std::unique_ptr<Decoder> source_model_;
  CompressStageResult res_;
};

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
  check_compress_options(o);
  CompressStageResult res = CompressJob(o).run();
  res.seconds = seconds_since(t0);
  return res;
}

}  // namespace kvf
