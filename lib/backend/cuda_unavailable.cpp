// Built instead of lib/backend/cuda/ when the CUDA backend is configured out (KVF_CUDA=OFF or no nvcc).
#include "backend/backend.h"
#include "core/error.h"

namespace kvf {

namespace {
constexpr const char* kReason = "built without the CUDA backend (configure with -DKVF_CUDA=ON where nvcc is installed)";
}

bool cuda_device_available(std::string* why) {
  if (why) *why = kReason;
  return false;
}

std::unique_ptr<Backend> make_cuda_backend() { fail("cuda backend: ", kReason); }

}  // namespace kvf
