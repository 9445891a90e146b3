#include <cstdio>
#include <memory>

#include "common/cli.h"
#include "store_lock_option.h"
#include "prep/retrieval_stages.h"
#include "retrieval_commands.h"

namespace kvf::cli {

void add_index_command(CLI::App& app) {
  struct Args : StoreCommandOptions {
    IndexSpec spec;  // the options bind to it: its defaults (and so --help's) are the library's
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("index", "Build the FAISS index over a store's embeddings (store: index.faiss)");
  cmd->footer(
      "Examples:\n  kvprep index --store stores/demo\n  kvprep index --store stores/big --index hnsw --hnsw-m 32\n"
      "  kvprep index --store stores/huge --index ivfpq --ivf-nlist 4096 --ivf-nprobe 32 --train-sample 200000\n"
      "Inner product over unit vectors (cosine). flat is exact; ivf, ivfpq and hnsw trade a little recall for\n"
      "speed on large corpora (docs/scale.md measures them on a million chunks). ivfpq keeps pq-m bytes per\n"
      "vector in its lists and re-ranks pq-refine x k candidates exactly. The index is rebuilt when the\n"
      "embeddings or these settings change.");
  a->add_store_option(cmd, "store directory (after `kvprep embed`)");
  cmd->add_option("--index", a->spec.kind, "flat, ivf, ivfpq or hnsw")
      ->capture_default_str()
      ->check(CLI::IsMember({"flat", "ivf", "ivfpq", "hnsw"}));
  cmd->add_option("--ivf-nlist", a->spec.ivf_nlist, "ivf lists (0: min(4 sqrt(n), n/39))")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--ivf-nprobe", a->spec.ivf_nprobe, "ivf lists searched per query")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--pq-m", a->spec.pq_m, "ivfpq bytes per vector (0: dim/8; must divide dim)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--pq-refine", a->spec.pq_refine, "ivfpq: re-rank this many x k candidates exactly (0: no)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 10));
  cmd->add_option("--train-sample", a->spec.train_sample, "ivf/ivfpq k-means training rows (0: 256 per list)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--hnsw-m", a->spec.hnsw_m, "hnsw links per node")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 16));
  cmd->add_option("--hnsw-ef-construction", a->spec.hnsw_ef_construction, "hnsw build breadth")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--hnsw-ef-search", a->spec.hnsw_ef_search, "hnsw search breadth")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  a->add_lock_and_common_options(cmd, "one JSON object: store, index, unchanged, vectors, seconds");
  cmd->callback([a] {
    const StoreCommandScope scope(*a);
    const IndexStageResult r = run_index_stage({a->store, a->spec});
    if (a->common.json) {
      print_json({{"store", a->store}, {"index", a->spec.kind}, {"unchanged", r.unchanged}, {"vectors", r.vectors},
                  {"seconds", r.seconds}});
      return;
    }
    if (r.unchanged) {
      std::printf("nothing to do: the %s index of %s covers its %llu embeddings\n", a->spec.kind.c_str(),
                  a->store.c_str(), (unsigned long long)r.vectors);
    } else {
      std::printf("indexed %llu vectors (%s) in %.2f s\n", (unsigned long long)r.vectors, a->spec.kind.c_str(),
                  r.seconds);
    }
  });
}

}  // namespace kvf::cli
