// Stores for end-to-end tests, built through the real kvprep stages with their progress silenced.
#pragma once
#include <string>
#include <vector>

namespace kvf::test {

// kvprep chunk of `corpus` into `store`, tokenized with `model`.
void chunk_test_store(const std::string& corpus, const std::string& store, const std::string& model);
// kvprep embed, index (flat) and neighbors (top_n) over the store's chunks; `embedder` is a BERT folder
// (support/unit_models.h), "" for MiniLM.
void index_test_store(const std::string& store, int top_n, const std::string& embedder = "");
// Both of the above, then kvprep prefill of each mode (the similarity mode after top_n neighbours).
void build_test_store(const std::string& corpus, const std::string& store, const std::string& model, int top_n,
                      const std::vector<std::string>& modes = {"independent", "similarity"},
                      const std::string& embedder = "");

}  // namespace kvf::test
