#include "store/store_format.h"

#include "core/error.h"

namespace kvf {

int64_t require_known_version(const std::string& file, const std::string& field, int64_t found, int64_t current) {
  const std::string known = current == 1 ? "only version 1" : "only versions 1 to " + std::to_string(current);
  KVF_CHECK(found <= current, file, ": ", field, " is ", found, ", but this kvfuse reads ", known,
            ": the file was written by a newer kvfuse; read it with that one");
  KVF_CHECK(found >= 1, file, ": ", field, " is ", found, ", but this kvfuse reads ", known);
  return found;
}

}  // namespace kvf
