// Tiny random-weight Llama-family models (io/random_model.h) written to unique files under the test temp dir, so
// engine tests need no download and run in milliseconds.
#pragma once
#include <string>

#include "io/random_model.h"

namespace kvf::test {

using TinyModelSpec = RandomModelSpec;

// Writes the model to a unique file under the test temp dir and returns its path.
std::string write_tiny_model(const TinyModelSpec& spec);

}  // namespace kvf::test
