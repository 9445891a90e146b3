// Tiny random models that run on text, for end-to-end tests under the `unit` label: a Llama-family decoder
// (io/random_model.h) written as a Hugging Face folder with a byte-level tokenizer (support/hf_folder_writer.h:
// one token per byte, so any text tokenizes), and a BERT embedder folder (io/random_bert.h). Stores built with
// them (support/test_store.h, with the embedder folder) need no download and take a fraction of a second.
#pragma once
#include <string>

#include "io/random_bert.h"
#include "io/random_model.h"

namespace kvf::test {

// The decoder spec the text tests use: 2 layers, hidden 64, 4/2 heads, a vocabulary of 300 (the 256 bytes, then
// fillers), F32 weights.
RandomModelSpec tiny_text_decoder_spec(uint32_t seed = 42);

// Writes the decoder as a Hugging Face folder `dir` (config.json, model.safetensors, tokenizer.json) and returns it.
std::string write_tiny_text_decoder(const std::string& dir, const RandomModelSpec& spec = tiny_text_decoder_spec());

// Writes the decoder as a GGUF file `path` with a placeholder SentencePiece-style vocabulary (RandomModelSpec::
// placeholder_vocab: every text falls back to its bytes' <0xNN> tokens), for the commands' SentencePiece path.
std::string write_tiny_spm_decoder(const std::string& path, RandomModelSpec spec = tiny_text_decoder_spec());

// Writes a random BERT embedder folder `dir` and returns it.
std::string write_tiny_embedder(const std::string& dir, const RandomBertSpec& spec = {});

}  // namespace kvf::test
