#include "query_options.h"

#include <algorithm>

#include "common/cli.h"
#include "core/hex.h"
#include "prep/store_model.h"

namespace kvf::cli {

QueryEngineOptions QueryCliOptions::engine_options() const {
  QueryEngineOptions e = engine;
  e.cache_bytes = (uint64_t)(cache_mb * 1024 * 1024);
  e.compute = compute_mode_from_name(compute);
  return e;
}

AnswerOptions QueryCliOptions::answer_options() const {
  AnswerOptions a = answer;
  a.method = parse_method(method);
  return a;
}

void add_query_options(CLI::App& cmd, QueryCliOptions& o) {
  cmd.add_option("--store", o.engine.store_dir, "the store built by kvprep (e.g. stores/demo)")->required();
  cmd.add_option("--model", o.engine.model, kStoreModelHelp);
  cmd.add_option("--embedder", o.engine.embedder, "the store's embedder, for retrieval: minilm or a folder")
      ->capture_default_str();
  cmd.add_option("--kv", o.engine.kv_mode, "stored KV to use: independent | similarity (FusionRAG offline stage) | a kvprep compress mode")
      ->capture_default_str();
  cmd.add_option("--method", o.method,
                 "full (plain prefill) | reuse (stored KV, question only) | cacheblend | a3 | fusion")
      ->capture_default_str()
      ->check(accepted_by(parse_method));
  cmd.add_option("--recompute", o.answer.recompute,
                 "share of context tokens cacheblend/a3/fusion recompute, 0..1")
      ->capture_default_str()
      ->check(finite_in(0, 1));
  cmd.add_option("--top-k", o.answer.top_k, "chunks to retrieve when none are given")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--link-tokens", o.answer.link_tokens, "KVLink link tokens computed after each chunk")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd.add_option("--max-tokens", o.answer.max_tokens, "most tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(1, 8192));
  cmd.add_option("--stop", o.answer.stop, "stop when the answer contains this text (repeatable)");
  cmd.add_option("--cache-mb", o.cache_mb, "chunk KV kept in memory between questions, MiB")
      ->capture_default_str()
      ->check(finite_in(0, 1 << 30));
  cmd.add_flag("--decode-low-bit-at-load", o.engine.decode_low_bit_at_load,
               "int4/int3/int2 KV: decode each chunk to f32 once when it is read, instead of holding it as stored and "
               "decoding the rows each forward pass gathers (more memory, less work per question)");
  cmd.add_option("--backend", o.engine.backend, "where the model runs: cpu | cuda (built with nvcc, needs a GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd.add_option("--compute", o.compute, "fast: compact weights, the CPU's fastest kernels; f32: the reference math")
      ->capture_default_str()
      ->check(accepted_by(compute_mode_from_name));
  add_exact_first_chunk_option(cmd, o.answer.exact_first_chunk, o.answer.first_chunk_kv);
  cmd.add_flag("--show-recomputed", o.answer.mark_recomputed,
               "after the answer, print each chunk's text with the tokens the method recomputed in [[ ]] (with "
               "--json: the field marked_chunks)");
  add_common_options(cmd, o.common,
                     "print one JSON object per question: answer, chunk_ids, sources, token counts, cache, "
                     "timings_ms {retrieve, load, select, prefill, ttft, decode}, tokens_per_s {decode}, ...");
}

void add_exact_first_chunk_option(CLI::App& cmd, bool& exact_first_chunk, FirstChunkKv& first_chunk_kv) {
  cmd.add_flag("--exact-first-chunk,!--no-exact-first-chunk", exact_first_chunk,
               "the first chunk takes its independent KV in every KV mode (it follows the system prompt alone, as "
               "when that KV was computed, so its rows are what full attention computes) and no selector spends "
               "recomputation on it; default: on where every KV mode asked for is independent or similarity, off "
               "for compressed modes");
  cmd.add_option_function<std::string>(
         "--first-chunk-kv", [&first_chunk_kv](const std::string& v) { first_chunk_kv = first_chunk_kv_from_name(v); },
         "where the exact first chunk's rows come from: stored (the store's independent KV), recompute (computed "
         "with the question, its tokens on top of the recompute budget: no independent KV needed), auto (stored "
         "where the store holds independent KV) [auto]")
      ->check(accepted_by(first_chunk_kv_from_name));
}

void apply_exact_first_chunk_default(const CLI::App& cmd, const std::vector<std::string>& kv_modes,
                                     bool& exact_first_chunk) {
  if (cmd.get_option("--exact-first-chunk")->count() > 0) return;
  // Both modes keep every layer at full precision next to the independent KV; a compressed mode's first chunk would
  // change precision or layers beside the others, so there the user asks for it explicitly.
  exact_first_chunk = std::all_of(kv_modes.begin(), kv_modes.end(),
                                  [](const std::string& m) { return m == "independent" || m == "similarity"; });
}

void print_answer_text(const QueryAnswer& a) {
  std::printf("%s\n", a.answer.c_str());
  std::string cited;
  for (const ChunkSource& source : a.sources)
    cited += (cited.empty() ? "" : "; ") + source.doc_id + (source.title.empty() ? "" : " (" + source.title + ")");
  note("[sources: %s]\n", cited.c_str());
  for (size_t c = 0; c < a.marked_chunks.size(); ++c)
    std::printf("chunk %zu (%s, %lld of %lld tokens recomputed): %s\n", c + 1, hex64(a.chunk_ids[c]).c_str(),
                (long long)a.recomputed_per_chunk[c], (long long)a.chunk_tokens[c], a.marked_chunks[c].c_str());
  std::fflush(stdout);
  note("[%s r=%.2f kv=%s | %zu chunks, %lld context tokens, %lld recomputed | ttft %.1f ms = retrieve %.1f + "
       "load %.1f + select %.1f + prefill %.1f | decode %zu tokens in %.1f ms, %.1f tokens/s | cache %llu hit / "
       "%llu miss]\n",
       method_name(a.method).c_str(), a.recompute, a.kv_mode.c_str(), a.chunk_ids.size(), (long long)a.n_context_tokens,
       (long long)a.n_recomputed, a.ms.ttft, a.ms.retrieve, a.ms.load, a.ms.select, a.ms.prefill, a.tokens.size(),
       a.ms.decode, decode_tokens_per_s(a.tokens.size(), a.ms.decode), (unsigned long long)a.cache_hits,
       (unsigned long long)a.cache_misses);
}

}  // namespace kvf::cli
