// Random-weight models of the papers' three decoders (Mistral-7B-Instruct-v0.2, Llama-3.1-8B-Instruct,
// Qwen2.5-7B-Instruct): each model's real shape (io/random_model.h real_model_shape) cut to 2 layers, Q8_0
// matrices, its real vocabulary (the vocabulary-only GGUFs `scripts/setup.sh paper-vocabs` installs into
// $KVFUSE_HOME/third_party/vocab) and its real chat template (tests/fixtures/chat_templates/*.jinja).
// tests/model/paper_shapes_test.cpp checks them against llama.cpp; other model tests can build stores from them.
#pragma once
#include <string>
#include <vector>

#include "io/random_model.h"

namespace kvf::test {

// "mistral-7b-v0.2", "llama-3.1-8b", "qwen2.5-7b" (real_model_shape's names).
std::vector<std::string> paper_shape_names();

// The spec of a paper shape's 2-layer model. Throws kvf::Error when its vocabulary is not installed (naming
// `scripts/setup.sh paper-vocabs`) or the template fixture is missing (KVF_FIXTURES).
RandomModelSpec paper_shape_spec(const std::string& name);

// The path of the written 2-layer model: $KVFUSE_HOME/models/random/<name>-2l-q8_0-<spec hash>.gguf, written
// (through a temporary file and a rename) when absent; a rerun reuses it. 0.7-1.7 GB each.
std::string paper_shape_model(const std::string& name);

}  // namespace kvf::test
