// Random-weight BERT sentence encoders written as the folder the embedder loads (model/bert_encoder.h, the
// sentence-transformers layout of all-MiniLM-L6-v2): config.json, vocab.txt, tokenizer_config.json,
// sentence_bert_config.json, modules.json, 1_Pooling/config.json and model.safetensors (F32). A tiny one lets the
// embed, index and neighbour stages and retrieval run in tests without a download. The same spec and seed always
// give the same files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvf {

struct RandomBertSpec {
  int n_layers = 2;
  int hidden = 32;
  int n_heads = 4;
  int intermediate = 64;
  int max_positions = 128;       // position embeddings
  int max_seq_length = 0;        // sentence_bert_config.json's max_seq_length; 0: max_positions
  std::string pooling = "mean";  // mean | cls
  // Whole words in the vocabulary after the special tokens, the single characters and their "##" continuations
  // (which alone spell any lowercase ASCII text). Empty: a few dozen common English words.
  std::vector<std::string> words;
  uint32_t seed = 7;
};

// The WordPiece vocabulary the spec writes, id order: [PAD] [UNK] [CLS] [SEP] [MASK], a-z, 0-9, ASCII
// punctuation, "##" + each letter and digit, then the words (those already present skipped).
std::vector<std::string> random_bert_vocabulary(const RandomBertSpec& spec);

// Writes the folder `dir` (created when missing; the files named above replaced). Word embeddings are drawn with
// unit spread and position embeddings smaller, so that texts sharing words embed close; matrices have spread
// 1.5 / sqrt(columns), LayerNorm weights 1 +- 0.1. Throws kvf::Error for shapes the loader would refuse.
void write_random_bert(const RandomBertSpec& spec, const std::string& dir);

}  // namespace kvf
