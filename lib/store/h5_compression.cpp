#include "store/h5_compression.h"

#include "core/error.h"

namespace kvf::h5 {

std::string compression_name(const Compression& c) {
  switch (c.codec) {
    case Compression::Codec::Deflate: return "deflate:" + std::to_string(c.level);
    case Compression::Codec::Zstd: return "zstd:" + std::to_string(c.level);
    case Compression::Codec::None: break;
  }
  return "none";
}

Compression parse_compression(const std::string& text, const std::string& where) {
  if (text == "none") return {};
  const size_t colon = text.find(':');
  const std::string codec = text.substr(0, colon);
  const std::string level = colon == std::string::npos ? "" : text.substr(colon + 1);
  const int max_level = codec == "deflate" ? 9 : codec == "zstd" ? 22 : 0;
  KVF_CHECK(max_level > 0, where, ": unknown compression '", text, "' (none, deflate:1..9, zstd:1..22)");
  KVF_CHECK(!level.empty() && level.size() <= 2 && level.find_first_not_of("0123456789") == std::string::npos &&
                std::stoi(level) >= 1 && std::stoi(level) <= max_level,
            where, ": compression '", text, "' needs a level 1..", max_level, " after '", codec, ":'");
  return {codec == "deflate" ? Compression::Codec::Deflate : Compression::Codec::Zstd, std::stoi(level)};
}

}  // namespace kvf::h5
