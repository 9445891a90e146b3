// kvf_neighbor_overlap: how much of a chunk's similarity-KV context is in the prompt it is answered in. FusionRAG
// computes each chunk's stored KV after its top-n most similar chunks of the whole store; at query time the chunk
// sits among the question's other passages. The closer those two contexts are, the more the similarity KV can
// stand in for full attention. For every question of a data set (its own passages, the fixed setting) this prints
// the share of each chunk's stored neighbours that are among the prompt's other chunks, and what chance gives.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "common/cli.h"
#include "core/error.h"
#include "fusion/passage_chunks.h"
#include "fusion/query_file.h"
#include "io/hf_folder.h"
#include "io/model_paths.h"
#include "model/fingerprint.h"
#include "model/gguf_tokenizer.h"
#include "store/manifest.h"
#include "store/neighbor_table.h"

int main(int argc, char** argv) {
  CLI::App app{"kvf_neighbor_overlap: share of each chunk's stored neighbours that are in its prompt"};
  std::string store, queries, model = "smollm2";
  bool json = false;
  app.add_option("--store", store, "store with neighbour lists (kvprep neighbors), built from the questions' passages")
      ->required();
  app.add_option("--queries", queries, "question file with \"contexts\" (the data sets' format)")->required();
  app.add_option("--model", model, "the store's decoder (its tokenizer cuts passages into the store's chunks)")
      ->capture_default_str();
  app.add_flag("--json", json, "print one JSON object per question, then the summary");
  app.footer(
      "Example:\n"
      "  kvf_neighbor_overlap --store stores/paper-2wiki-cacheblend-qwen0.5b --model qwen0.5b \\\n"
      "      --queries ../shared/data/2wikimqa_cacheblend_clean102.jsonl\n");
  app.callback([&] {
    const kvf::Manifest manifest = kvf::load_manifest(store);
    KVF_CHECK(manifest.settings.contains("chunking"), store, ": not chunked yet; run `kvprep chunk` first");
    const auto file = kvf::open_decoder_file(kvf::resolve_model(model));
    const uint64_t fingerprint = kvf::model_fingerprint(*file);
    const std::unique_ptr<kvf::Tokenizer> tokenizer = kvf::tokenizer_from_gguf(*file);
    const kvf::NeighborTable nb = kvf::NeighborTable::read(kvf::store_file_path(store, "neighbors.h5"));
    std::unordered_map<uint64_t, size_t> row_of;
    for (size_t r = 0; r < nb.size(); ++r) row_of[nb.chunk_ids[r]] = r;

    std::vector<double> shares, chance;
    size_t chunks_seen = 0, chunks_none = 0;
    for (const kvf::QueryRecord& rec : kvf::read_query_file(queries)) {
      const kvf::Query& q = rec.query;
      const std::vector<uint64_t> ids =
          kvf::chunk_passages(q.contexts, manifest.settings.at("chunking"), *tokenizer, fingerprint).ids;
      const std::unordered_set<uint64_t> prompt(ids.begin(), ids.end());
      if (prompt.size() < 2) continue;
      double in_prompt = 0, listed = 0;
      size_t none = 0;
      for (uint64_t id : prompt) {
        const auto it = row_of.find(id);
        KVF_CHECK(it != row_of.end(), store, ": a chunk of question '", q.id, "' is not in the neighbour lists; "
                  "build the store from the data set's passages with the same --model");
        int here = 0, n = 0;
        for (int j = 0; j < nb.top_n; ++j) {
          const int64_t row = nb.rows[it->second * nb.top_n + j];
          if (row < 0) continue;
          ++n;
          here += prompt.count(nb.chunk_ids[(size_t)row]) ? 1 : 0;
        }
        in_prompt += here, listed += n, none += here == 0;
      }
      const double share = in_prompt / listed;
      // Neighbours drawn at random from the other chunks of the store land in the prompt this often.
      const double random = (double)(prompt.size() - 1) / (double)(nb.size() - 1);
      shares.push_back(share), chance.push_back(random);
      chunks_seen += prompt.size(), chunks_none += none;
      if (json)
        std::printf("%s\n", nlohmann::json({{"id", q.id},
                                            {"chunks", prompt.size()},
                                            {"neighbors_in_prompt", share},
                                            {"chunks_without_one", none},
                                            {"chance", random}})
                                .dump()
                                .c_str());
    }
    KVF_CHECK(!shares.empty(), queries, ": no question has two or more chunks in ", store);
    std::vector<double> sorted = shares;
    std::sort(sorted.begin(), sorted.end());
    const auto quantile = [&](double p) { return sorted[(size_t)(p * (double)(sorted.size() - 1) + 0.5)]; };
    const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / (double)shares.size();
    const double mean_chance = std::accumulate(chance.begin(), chance.end(), 0.0) / (double)chance.size();
    const nlohmann::json summary = {{"questions", shares.size()},
                                    {"top_n", nb.top_n},
                                    {"store_chunks", nb.size()},
                                    {"neighbors_in_prompt_mean", mean},
                                    {"quartiles", {quantile(0.25), quantile(0.5), quantile(0.75)}},
                                    {"chunks_without_one", (double)chunks_none / (double)chunks_seen},
                                    {"chance_mean", mean_chance}};
    if (json) {
      std::printf("%s\n", summary.dump().c_str());
      return;
    }
    std::printf("%zu questions, %zu chunks in the store, top-%d neighbours each\n", shares.size(), nb.size(),
                nb.top_n);
    std::printf("neighbours in the prompt: mean %.1f%% (quartiles %.0f%% / %.0f%% / %.0f%%); chance %.1f%%\n",
                100 * mean, 100 * quantile(0.25), 100 * quantile(0.5), 100 * quantile(0.75), 100 * mean_chance);
    std::printf("prompt chunks with no stored neighbour in their prompt: %.1f%%\n",
                100.0 * (double)chunks_none / (double)chunks_seen);
  });
  return kvf::cli::run_app(app, argc, argv);
}
