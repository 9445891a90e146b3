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

int max_compression_level(Compression::Codec codec) {
  switch (codec) {
    case Compression::Codec::Deflate: return 9;
    case Compression::Codec::Zstd: return 22;
    case Compression::Codec::None: break;
  }
  return 0;
}

Compression parse_compression(const std::string& text, const std::string& where) {
  if (text == "none") return {};
  const size_t colon = text.find(':');
  const std::string codec = text.substr(0, colon);
  const std::string level = colon == std::string::npos ? "" : text.substr(colon + 1);
  const Compression::Codec parsed = codec == "deflate" ? Compression::Codec::Deflate
                                   : codec == "zstd"    ? Compression::Codec::Zstd
                                                        : Compression::Codec::None;
  const int max_level = max_compression_level(parsed);
  KVF_CHECK(max_level > 0, where, ": unknown compression '", text, "' (none, deflate:1..9, zstd:1..22)");
  KVF_CHECK(!level.empty() && level.size() <= 2 && level.find_first_not_of("0123456789") == std::string::npos &&
                std::stoi(level) >= 1 && std::stoi(level) <= max_level,
            where, ": compression '", text, "' needs a level 1..", max_level, " after '", codec, ":'");
  return {parsed, std::stoi(level)};
}

}  // namespace kvf::h5
