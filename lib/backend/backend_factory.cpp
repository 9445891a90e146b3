#include "backend/backend.h"
#include "core/error.h"

namespace kvf {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend();
  fail("unknown backend '", name, "' (expected cpu or cuda)");
}

}  // namespace kvf
