// Sentence embeddings from a BERT-family encoder in the sentence-transformers layout (all-MiniLM-L6-v2,
// bge-small-en-v1.5): model.safetensors + config.json, WordPiece vocab.txt, 1_Pooling/config.json (mean or CLS),
// sentence_bert_config.json (max_seq_length). The forward pass is BERT's: word + position + token-type
// embeddings, LayerNorm, then per layer bidirectional self-attention over the sequence's own tokens, residual,
// LayerNorm, GELU (erf) FFN, residual, LayerNorm (post-LN). Embeddings are pooled and L2-normalised.
// Padding costs nothing: the tokens of a batch are packed, the GEMMs run over all of them at once and attention
// runs per sequence. The GEMMs and attention are Backend ops; embeddings, LayerNorm and GELU are host loops, so
// the backend must keep its tensors in host memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "text/wordpiece.h"

namespace kvf {

struct BertConfig {
  int vocab_size = 0, hidden = 0, layers = 0, heads = 0, intermediate = 0, max_positions = 0, type_vocab_size = 0;
  float layer_norm_eps = 1e-12f;
  // Reads config.json; throws naming the file and the key when a field is missing or unsupported.
  static BertConfig load(const std::string& path);
};

enum class Pooling : uint8_t { Mean, Cls };

class SentenceEmbedder {
 public:
  // Loads the model folder; throws kvf::Error naming the file and field or tensor on any problem.
  static std::unique_ptr<SentenceEmbedder> load(const std::string& dir, Backend& backend);

  int dim() const { return config_.hidden; }
  int max_length() const { return max_length_; }  // ids per text, [CLS] and [SEP] included; longer texts are cut
  Pooling pooling() const { return pooling_; }
  const BertConfig& config() const { return config_; }
  const WordPieceTokenizer& tokenizer() const { return tokenizer_; }

  // Row-major [texts.size(), dim()] embeddings of unit L2 norm, batch_size texts per forward pass.
  std::vector<float> embed(const std::vector<std::string>& texts, int batch_size = 32) const;
  // The same for already tokenized texts: the tokens of row r are the columns where mask is 1, at their column's
  // position; every row needs at least one.
  std::vector<float> embed_tokens(const TokenBatch& batch) const;
  // XXH3 of the config, pooling, max length, tokenizer and every weight: equal fingerprints embed alike.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  struct Layer {
    Tensor wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b, w1, b1, w2, b2, ln2_g, ln2_b;
  };
  struct Packed;

  SentenceEmbedder(Backend& backend, WordPieceTokenizer tokenizer)
      : backend_(&backend), tokenizer_(std::move(tokenizer)) {}
  void layer_forward(const Layer& w, const Packed& p, Tensor& x) const;

  Backend* backend_;
  WordPieceTokenizer tokenizer_;
  BertConfig config_;
  Pooling pooling_ = Pooling::Mean;
  int max_length_ = 0;
  Tensor word_embd_, pos_type_embd_, embd_ln_g_, embd_ln_b_;  // pos_type: position + token type 0
  std::vector<Layer> layers_;
  uint64_t fingerprint_ = 0;
};

}  // namespace kvf
