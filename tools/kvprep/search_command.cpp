#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/cli.h"
#include "common/common_options.h"
#include "core/hex.h"
#include "io/model_paths.h"
#include "prep/store_search.h"
#include "retrieval_commands.h"

namespace kvf::cli {
namespace {

// The first `width` bytes of a text on one line, cut at a UTF-8 boundary.
std::string snippet(const std::string& text, size_t width) {
  std::string s = text.substr(0, std::min(text.size(), width));
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s + (s.size() < text.size() ? "..." : "");
}

}  // namespace

void add_search_command(CLI::App& app) {
  struct Args {
    std::string store, query, embedder = kDefaultEmbedder;
    int top_k = StoreSearcher::kDefaultTopK;
    CommonOptions common;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("search", "Show the chunks a query retrieves from a store");
  cmd->footer("Example:\n  kvprep search --store stores/demo --query \"Who designed the Eiffel Tower?\" --top-k 3");
  cmd->add_option("--store", a->store, "store directory (after `kvprep index`)")->required();
  cmd->add_option("--query", a->query, "the query text")->required();
  cmd->add_option("--top-k", a->top_k, "chunks to show")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--embedder", a->embedder, "minilm or the folder of the store's embedder")->capture_default_str();
  add_common_options(*cmd, a->common, "one JSON object: query and hits [{rank, score, chunk_id, doc_id, title, text}]");
  cmd->callback([a] {
    const CommandSettings settings(a->common);
    const StoreSearcher searcher(a->store, resolve_model(a->embedder));
    const auto hits = searcher.search(a->query, a->top_k);
    if (a->common.json) {
      nlohmann::json out = {{"query", a->query}, {"hits", nlohmann::json::array()}};
      for (size_t i = 0; i < hits.size(); ++i)
        out["hits"].push_back({{"rank", i + 1},
                               {"score", hits[i].score},
                               {"chunk_id", hex64(hits[i].chunk->id)},
                               {"doc_id", hits[i].chunk->doc_id},
                               {"title", hits[i].chunk->title},
                               {"text", hits[i].chunk->text}});
      print_json(out);
      return;
    }
    for (size_t i = 0; i < hits.size(); ++i)
      std::printf("%2zu. %.3f  %s  [%s] %s\n    %s\n", i + 1, hits[i].score,
                  hex64(hits[i].chunk->id).c_str(), hits[i].chunk->doc_id.c_str(),
                  hits[i].chunk->title.c_str(), snippet(hits[i].chunk->text, 160).c_str());
  });
}

}  // namespace kvf::cli
