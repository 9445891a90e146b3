// Model fingerprints: what every stored chunk id and KV row records, so that nothing mixes data of two models.
#pragma once
#include <cstdint>
#include <string>

namespace kvf {

namespace gguf {
class File;
}

// XXH3-64 over the architecture metadata (general.architecture, every "<arch>." key), the tokenizer metadata
// ("tokenizer." keys), every tensor's name, type and shape, and all tensor bytes. Keys are hashed in sorted
// order with their types, so the value does not depend on how the file orders them; general.name and other
// descriptive keys are left out. About 10 ms for SmolLM2's 98 MB file once it is in the page cache.
uint64_t model_fingerprint(const gguf::File& file);

// XXH3-64 over the "tokenizer." metadata alone (vocabulary, merges, special ids, chat template): what decides
// the token ids of a text.
uint64_t tokenizer_fingerprint(const gguf::File& file);

}  // namespace kvf
