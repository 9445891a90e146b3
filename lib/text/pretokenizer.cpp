#include "text/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdint>
#include <cstdlib>
#include <map>

#include "core/error.h"

namespace kvf {
namespace {

// The regexes of llama.cpp's llm_tokenizer_bpe, verbatim. llama.cpp runs the GPT-2 and Llama 3 ones through
// hand-written matchers; within one piece those match exactly what the regexes match here.
const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

PreTokenizerConfig config(std::vector<std::string> regexes, bool ignore_merges, bool clean_spaces, bool add_bos) {
  return PreTokenizerConfig{std::move(regexes), ignore_merges, clean_spaces, add_bos};
}

const std::map<std::string, PreTokenizerConfig>& configs() {
  static const std::map<std::string, PreTokenizerConfig> table = [] {
    const std::vector<std::string> deflt = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
    const std::vector<std::string> starcoder = {R"(\p{N})", kGpt2};
    std::map<std::string, PreTokenizerConfig> t;
    t["default"] = config(deflt, false, true, false);
    for (const char* name : {"llama3", "llama-v3", "llama-bpe", "falcon3"}) {
      t[name] = config({kLlama3}, true, true, true);
    }
    for (const char* name : {"dbrx", "smaug-bpe"}) t[name] = config({kLlama3}, false, true, false);
    t["qwen2"] = config({kQwen2}, false, false, false);
    for (const char* name : {"stablelm2", "megrez"}) t[name] = config({kQwen2}, false, true, false);
    for (const char* name : {"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}) {
      t[name] = config(starcoder, false, true, false);
    }
    for (const char* name : {"smollm", "command-r"}) t[name] = config(starcoder, false, false, false);
    // "gpt2" is not a llama.cpp name: an alias of "gpt-2".
    for (const char* name : {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "roberta-bpe"}) {
      t[name] = config({kGpt2}, false, true, false);
    }
    return t;
  }();
  return table;
}

// Length of the UTF-8 sequence llama.cpp reads at text[i] and the code point it spells, or 0 when it reads none.
size_t llama_utf8_sequence(std::string_view text, size_t i, uint32_t& cpt) {
  const auto byte = [&](size_t k) { return (uint8_t)text[i + k]; };
  const auto continuation = [&](size_t k) { return i + k < text.size() && (byte(k) & 0xC0) == 0x80; };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) {
    cpt = b0;
    return 1;
  }
  if (b0 < 0xC0) return 0;
  if (b0 < 0xE0) {
    if (!continuation(1)) return 0;
    cpt = ((b0 & 0x1Fu) << 6) | (byte(1) & 0x3Fu);
    return 2;
  }
  if (b0 < 0xF0) {
    if (!continuation(1) || !continuation(2)) return 0;
    cpt = ((b0 & 0x0Fu) << 12) | ((byte(1) & 0x3Fu) << 6) | (byte(2) & 0x3Fu);
    return 3;
  }
  if (b0 < 0xF8) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    cpt = ((b0 & 0x07u) << 18) | ((byte(1) & 0x3Fu) << 12) | ((byte(2) & 0x3Fu) << 6) | (byte(3) & 0x3Fu);
    return 4;
  }
  return 0;
}

void append_utf8(uint32_t cpt, std::string& out) {
  if (cpt < 0x80) {
    out += (char)cpt;
  } else if (cpt < 0x800) {
    out += (char)(0xC0 | (cpt >> 6));
    out += (char)(0x80 | (cpt & 0x3F));
  } else if (cpt < 0x10000) {
    out += (char)(0xE0 | (cpt >> 12));
    out += (char)(0x80 | ((cpt >> 6) & 0x3F));
    out += (char)(0x80 | (cpt & 0x3F));
  } else {
    out += (char)(0xF0 | (cpt >> 18));
    out += (char)(0x80 | ((cpt >> 12) & 0x3F));
    out += (char)(0x80 | ((cpt >> 6) & 0x3F));
    out += (char)(0x80 | (cpt & 0x3F));
  }
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

struct PreTokenizer::Regex {
  std::unique_ptr<pcre2_code, CodeDeleter> code;
};

const PreTokenizerConfig& pre_tokenizer_config(const std::string& pre) {
  const auto it = configs().find(pre);
  if (it == configs().end()) fail("unknown tokenizer.ggml.pre '", pre, "'");
  return it->second;
}

PreTokenizer::PreTokenizer(const std::string& pre) : config_(&pre_tokenizer_config(pre)) {
  auto regexes = std::make_shared<std::vector<Regex>>();
  for (const std::string& pattern : config_->regexes) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile((PCRE2_SPTR)pattern.c_str(), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                     &error, &offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      fail("pre-tokenizer '", pre, "': regex '", pattern, "' at ", offset, ": ", (const char*)message);
    }
    regexes->push_back(Regex{std::unique_ptr<pcre2_code, CodeDeleter>(code)});
    // Without JIT (unsupported CPU) PCRE2 interprets the same code: slower, same result.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  }
  regexes_ = std::move(regexes);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  // llama.cpp counts U+0085 (NEL) as whitespace; PCRE2's \s does not. U+00A0 is whitespace to both and has the
  // same UTF-8 length, so the regexes run on a copy with NEL swapped and the cuts apply to the original.
  std::string swapped;
  std::string_view subject = text;
  if (text.find("\xC2\x85") != std::string_view::npos) {
    swapped.assign(text);
    for (size_t at = swapped.find("\xC2\x85"); at != std::string::npos; at = swapped.find("\xC2\x85", at + 2)) {
      swapped[at + 1] = '\xA0';
    }
    subject = swapped;
  }

  // Pieces as [begin, end) byte offsets; each regex cuts every piece the previous one left.
  std::vector<std::pair<size_t, size_t>> pieces = {{0, text.size()}}, next;
  for (const Regex& regex : *regexes_) {
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
        pcre2_match_data_create_from_pattern(regex.code.get(), nullptr));
    next.clear();
    for (const auto& [begin, end] : pieces) {
      const auto piece = (PCRE2_SPTR)subject.data() + begin;
      const size_t length = end - begin;
      size_t at = 0, done = 0;  // search position, end of the last piece emitted (relative to begin)
      while (at < length) {
        const int rc = pcre2_match(regex.code.get(), piece, length, at, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) fail("pre-tokenizer regex failed with PCRE2 error ", rc);
        const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
        if (span[1] == span[0]) {  // an empty match cuts nothing: step over one character
          at = span[0] + 1;
          while (at < length && (piece[at] & 0xC0) == 0x80) ++at;
          continue;
        }
        if (span[0] > done) next.emplace_back(begin + done, begin + span[0]);
        next.emplace_back(begin + span[0], begin + span[1]);
        done = at = span[1];
      }
      if (done < length) next.emplace_back(begin + done, end);
    }
    pieces.swap(next);
  }
  for (const auto& [begin, end] : pieces) words.push_back(text.substr(begin, end - begin));
}

std::string to_llama_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cpt = 0;
    const size_t n = llama_utf8_sequence(text, i, cpt);
    if (n == 0 || (cpt >= 0xD800 && cpt <= 0xDFFF) || cpt > 0x10FFFF) {
      cpt = 0xFFFD;
      i += n ? n : 1;
    } else {
      i += n;
    }
    append_utf8(cpt, out);
  }
  return out;
}

std::string to_nfc(std::string_view utf8) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
                                          (utf8proc_ssize_t)utf8.size(), &out,
                                          (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  KVF_CHECK(n >= 0, "NFC normalization failed: ", utf8proc_errmsg(n));
  std::string nfc(reinterpret_cast<const char*>(out), (size_t)n);
  std::free(out);
  return nfc;
}

}  // namespace kvf
