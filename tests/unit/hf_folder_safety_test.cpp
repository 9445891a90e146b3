// A model folder is read only inside itself and only from regular files, and no error quotes a file's bytes:
// index entries leading out of the folder are refused (links inside a Hugging Face cache stay allowed), a FIFO,
// device or folder where a file belongs is refused at once instead of blocking the loader, and a file that is not
// what its name says (a link to some other file) is reported without showing its content.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "io/gguf_writer.h"
#include "io/hf_folder.h"
#include "model/gguf_tokenizer.h"
#include "support/hf_folder_writer.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"
#include "text/bpe_tokenizer.h"

namespace kvf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kShard2 = "model-00002-of-00002.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// What loading `path` says, run in a child process so that a loader blocking on a FIFO fails the test instead of
// hanging it: "(hung)" when the child has not answered within 10 s.
std::string error_in_child(const std::string& path) {
  int fds[2];
  if (::pipe(fds) != 0) return "(pipe failed)";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string message = error_of([&] { open_decoder_file(path); });
    (void)!::write(fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  pollfd p{fds[0], POLLIN, 0};
  for (;;) {
    if (::poll(&p, 1, 10000) <= 0) {
      ::kill(pid, SIGKILL);
      message = "(hung)";
      break;
    }
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    message.append(buf, (size_t)n);
  }
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return message;
}

class HfFolderSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_test_dir();
    dir_ = (root_ / "model").string();
    test::write_hf_folder(test::write_tiny_model({}), dir_, {2});
  }
  json read(const std::string& file) const { return read_json_file(dir_ + "/" + file); }
  void write(const std::string& file, const json& j) const { std::ofstream(dir_ + "/" + file) << j.dump(); }
  void write_text(const fs::path& path, const std::string& text) const {
    std::ofstream(path, std::ios::binary) << text;
  }
  // Points every tensor of shard 2 at `entry` in the index.
  void point_shard2_at(const std::string& entry) {
    if (index_.is_null()) index_ = read(kIndex);
    json index = index_;
    for (auto& [name, file] : index["weight_map"].items())
      if (file == kShard2) file = entry;
    write(kIndex, index);
  }
  json index_;  // as written
  std::string load_error() const {
    return error_of([&] { open_decoder_file(dir_); });
  }
  fs::path root_;
  std::string dir_;
};

TEST_F(HfFolderSafety, IndexEntriesLeadingOutOfTheFolderAreRefused) {
  // A good shard in a sibling folder: without the check it loads (exit 0) from outside the folder.
  fs::create_directories(root_ / "other");
  fs::rename(dir_ + "/" + kShard2, root_ / "other" / kShard2);
  point_shard2_at(std::string("../other/") + kShard2);
  EXPECT_NE(load_error().find("= \"../other/model-00002-of-00002.safetensors\" leads out of the folder through '..'"),
            std::string::npos)
      << load_error();
  point_shard2_at((root_ / "other" / kShard2).string());
  EXPECT_NE(load_error().find("\" is an absolute path"), std::string::npos) << load_error();
  point_shard2_at(std::string("sub/../../other/") + kShard2);
  EXPECT_NE(load_error().find("leads out of the folder"), std::string::npos) << load_error();
  point_shard2_at("");
  EXPECT_NE(load_error().find("\"] = \"\" is empty"), std::string::npos) << load_error();
  point_shard2_at(std::string("./") + kShard2);
  EXPECT_NE(load_error().find("has an empty or '.' part"), std::string::npos) << load_error();
  point_shard2_at(std::string("model-00001-of-00002.safetensors") + '\0' + "../x");
  EXPECT_NE(load_error().find("holds a NUL byte"), std::string::npos) << load_error();
  // Back inside the folder (a subfolder is inside too), it loads.
  fs::create_directories(dir_ + "/sub");
  fs::rename(root_ / "other" / kShard2, dir_ + "/sub/" + kShard2);
  point_shard2_at(std::string("sub/") + kShard2);
  EXPECT_EQ(load_error(), "(no error)");
}

// A Hugging Face cache: snapshots/<rev>/<file> -> ../../blobs/<hash>. The entries name files inside the snapshot
// folder; the links lead out of it, and that is allowed.
TEST_F(HfFolderSafety, HubCacheLinksStayAllowed) {
  const fs::path blobs = root_ / "hub" / "blobs", snapshot = root_ / "hub" / "snapshots" / "0123abc";
  fs::create_directories(blobs);
  fs::create_directories(snapshot);
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string blob = "blob" + std::to_string(n++);
    fs::copy_file(entry.path(), blobs / blob);
    fs::create_symlink(fs::path("../../blobs") / blob, snapshot / entry.path().filename());
  }
  EXPECT_EQ(error_of([&] { open_decoder_file(snapshot.string()); }), "(no error)");
}

// "root:$6$..." read as a little-endian u64, as the safetensors reader reads a header length.
uint64_t first_u64(const std::string& bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | (uint8_t)bytes[(size_t)i];
  return v;
}

TEST_F(HfFolderSafety, ErrorsNeverQuoteTheBytesOfAFileReachedThroughALink) {
  const std::string secret = "root:$6$hunter2secret:19000:0:99999:7:::\n";
  const fs::path shadow = root_ / "shadow";
  write_text(shadow, secret);
  // A shard that is a link to some other file: the 8 bytes read as a header length are not shown.
  fs::remove(dir_ + "/" + kShard2);
  fs::create_symlink(shadow, dir_ + "/" + kShard2);
  std::string msg = load_error();
  EXPECT_NE(msg.find(std::string(kShard2) + ": header length field does not fit the file's size (" +
                     std::to_string(secret.size()) + " bytes): not a safetensors file"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find(std::to_string(first_u64(secret))), std::string::npos) << msg;
  // A length that fits, then bytes that are no JSON: the parser's "last read" text is not shown.
  const std::string small = std::string("\x14\0\0\0\0\0\0\0", 8) + "\"hunter2secret-hunter2secret";
  write_text(shadow, small);
  msg = load_error();
  EXPECT_NE(msg.find("header is not valid JSON"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
  // config.json linked to a file whose first token is a long unterminated string.
  fs::remove(dir_ + "/config.json");
  write_text(shadow, "\"hunter2secret and more of the file");
  fs::create_symlink(shadow, dir_ + "/config.json");
  msg = load_error();
  EXPECT_NE(msg.find("config.json: not valid JSON"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
  // A "GGUF file" that is some other file: its first 4 bytes are not shown (in hex, "root" is 746f6f72).
  write_text(shadow, secret);
  msg = error_of([&] { open_decoder_file(shadow.string()); });
  EXPECT_NE(msg.find("not a GGUF file"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("746f6f72"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("root"), std::string::npos) << msg;
}

// Each file of a folder, and a GGUF file, replaced by a FIFO: refused at once, naming the file.
TEST_F(HfFolderSafety, FifosAreRefusedNotWaitedOn) {
  for (const char* file : {"config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", kIndex,
                           kShard2}) {
    SCOPED_TRACE(file);
    SetUp();
    const std::string path = dir_ + "/" + file;
    if (std::string(file) == "chat_template.jinja") write("tokenizer_config.json", json::object());
    fs::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    const std::string msg = error_in_child(dir_);
    EXPECT_NE(msg.find(std::string(file) + ": is a FIFO, not a regular file"), std::string::npos) << msg;
  }
  const std::string gguf = (root_ / "model.gguf").string();
  ASSERT_EQ(::mkfifo(gguf.c_str(), 0600), 0);
  const std::string msg = error_in_child(gguf);
  EXPECT_NE(msg.find("model.gguf: is a FIFO, not a regular file"), std::string::npos) << msg;
}

// A device (endless, or empty) or a folder where a file belongs.
TEST_F(HfFolderSafety, DevicesAndFoldersAreRefused) {
  fs::remove(dir_ + "/tokenizer.json");
  fs::create_symlink("/dev/zero", dir_ + "/tokenizer.json");
  std::string msg = error_in_child(dir_);
  EXPECT_NE(msg.find("tokenizer.json: is a character device, not a regular file"), std::string::npos) << msg;
  fs::remove(dir_ + "/config.json");
  fs::create_directory(dir_ + "/config.json");
  msg = load_error();
  EXPECT_NE(msg.find("model/config.json: is a folder, not a regular file"), std::string::npos) << msg;
}

// --- values the model readers used to accept or report without naming the file ---

TEST_F(HfFolderSafety, WrongTypesInTokenizerConfigNameFileFieldAndValue) {
  const auto with = [&](const json& cfg) {
    write("tokenizer_config.json", cfg);
    return load_error();
  };
  EXPECT_NE(with({{"clean_up_tokenization_spaces", "yes"}})
                .find("tokenizer_config.json: clean_up_tokenization_spaces = \"yes\" is not true or false"),
            std::string::npos)
      << with({{"clean_up_tokenization_spaces", "yes"}});
  EXPECT_NE(with({{"eos_token", 5}}).find("tokenizer_config.json: eos_token = 5 is neither a string nor an object"),
            std::string::npos)
      << with({{"eos_token", 5}});
  EXPECT_NE(with({{"bos_token", {{"content", 7}}}}).find("tokenizer_config.json: bos_token = {\"content\":7}"),
            std::string::npos)
      << with({{"bos_token", {{"content", 7}}}});
  EXPECT_NE(with({{"chat_template", 3}}).find("tokenizer_config.json: chat_template = 3 is neither a string"),
            std::string::npos)
      << with({{"chat_template", 3}});
  EXPECT_NE(with({{"chat_template", {{{"name", 1}}}}}).find("tokenizer_config.json: chat_template[0] = {\"name\":1}"),
            std::string::npos)
      << with({{"chat_template", {{{"name", 1}}}}});
  EXPECT_NE(with({{"add_bos_token", "true"}}).find("tokenizer_config.json: add_bos_token = \"true\" is not true"),
            std::string::npos);
  EXPECT_NE(with(json::array()).find("tokenizer_config.json: not a JSON object"), std::string::npos)
      << with(json::array());
  write("tokenizer_config.json", json::object());
  json tok = read("tokenizer.json");
  tok["added_tokens"] = {{{"id", 3}, {"content", byte_level_char(3)}, {"special", "yes"}}};
  write("tokenizer.json", tok);
  EXPECT_NE(load_error().find("tokenizer.json: added_tokens[0].special = \"yes\" is not true or false"),
            std::string::npos)
      << load_error();
  tok["added_tokens"] = json::object();
  write("tokenizer.json", tok);
  EXPECT_NE(load_error().find("tokenizer.json: added_tokens = {} is not an array"), std::string::npos)
      << load_error();
  tok.erase("added_tokens");
  tok["decoder"] = {{"type", 4}};
  write("tokenizer.json", tok);
  EXPECT_NE(load_error().find("tokenizer.json: decoder {\"type\":4} is not ByteLevel"), std::string::npos)
      << load_error();
}

TEST_F(HfFolderSafety, WrongTypesInConfigNameTheValue) {
  const auto with = [&](const char* key, const json& value) {
    json c = read("config.json");
    c[key] = value;
    write("config.json", c);
    return load_error();
  };
  EXPECT_NE(with("model_type", 42).find("config.json: model_type = 42 is not a string"), std::string::npos)
      << with("model_type", 42);
  with("model_type", "llama");
  // Beyond a float: GGUF keeps rope_theta and rms_norm_eps as f32.
  EXPECT_NE(with("rope_theta", 1e39).find("config.json: rope_theta = 1e+39 is not a finite positive number"),
            std::string::npos)
      << with("rope_theta", 1e39);
  with("rope_theta", 10000.0);
  EXPECT_NE(with("rms_norm_eps", -1e-6).find("config.json: rms_norm_eps = -1e-06 is not a finite positive number"),
            std::string::npos);
  with("rms_norm_eps", 1e-6);
  EXPECT_NE(with("rope_scaling", {{"rope_type", "llama3"},
                                  {"factor", 8.0},
                                  {"original_max_position_embeddings", 1e300}})
                .find("rope_scaling.original_max_position_embeddings = 1e+300 is not a positive integer"),
            std::string::npos);
  with("rope_scaling", nullptr);
  EXPECT_NE(with("vocab_size", 5000000).find("config.json: vocab_size = 5000000 is above the largest vocabulary"),
            std::string::npos)
      << with("vocab_size", 5000000);
  with("vocab_size", 97);
  EXPECT_NE(with("eos_token_id", {1, 500}).find("config.json: eos_token_id[1] = 500 is outside vocab_size 97"),
            std::string::npos)
      << with("eos_token_id", {1, 500});
  EXPECT_NE(with("eos_token_id", {1, "2"}).find("config.json: eos_token_id[1] = \"2\" is not a token id"),
            std::string::npos);
  EXPECT_NE(with("bos_token_id", 97).find("config.json: bos_token_id = 97 is outside vocab_size 97"),
            std::string::npos);
}

// The tokenizer built from the folder, or the error building it.
std::string tokenizer_error(const std::string& dir) {
  return error_of([&] { BpeTokenizer(bpe_vocabulary_from_gguf(*open_decoder_file(dir))); });
}

TEST_F(HfFolderSafety, BrokenVocabulariesAreRefusedNamingTokenizerJson) {
  json tok = read("tokenizer.json");
  const json good = tok;
  // A duplicate added token: the text of id 3 given again at id 5.
  tok["added_tokens"] = {{{"id", 5}, {"content", byte_level_char(3)}, {"special", true}}};
  write("tokenizer.json", tok);
  EXPECT_NE(tokenizer_error(dir_).find("tokenizer.json: added_tokens[0] token \"" + byte_level_char(3) +
                                       "\" has id 5, but it already has id 3"),
            std::string::npos)
      << tokenizer_error(dir_);
  // Another text at an id the vocabulary gives.
  tok["added_tokens"] = {{{"id", 5}, {"content", "<|x|>"}, {"special", true}}};
  write("tokenizer.json", tok);
  EXPECT_NE(tokenizer_error(dir_).find("tokenizer.json: added_tokens[0] gives id 5 to \"<|x|>\", but it already "
                                       "belongs to"),
            std::string::npos)
      << tokenizer_error(dir_);
  // The same token at the same id (as SmolLM2's file has them) is fine.
  tok["added_tokens"] = {{{"id", 5}, {"content", byte_level_char(5)}, {"special", true}}};
  write("tokenizer.json", tok);
  EXPECT_EQ(tokenizer_error(dir_), "(no error)");

  // Merges whose parts or result are not tokens.
  tok = good;
  const std::string a = byte_level_char('A'), b = byte_level_char('B');
  tok["model"]["merges"] = {a + " " + b};
  write("tokenizer.json", tok);
  EXPECT_NE(tokenizer_error(dir_).find("tokenizer.json: model.merges[0] = \"" + a + " " + b + "\": \"" + a + b +
                                       "\" is not in the vocabulary"),
            std::string::npos)
      << tokenizer_error(dir_);
  tok["model"]["merges"] = json::array({json::array({a, "zz"})});
  write("tokenizer.json", tok);
  EXPECT_NE(tokenizer_error(dir_).find("\"zz\" is not in the vocabulary"), std::string::npos) << tokenizer_error(dir_);
  tok["model"]["merges"] = {a + b};
  write("tokenizer.json", tok);
  EXPECT_NE(tokenizer_error(dir_).find("model.merges[0] = \"" + a + b + "\" is not \"left right\""),
            std::string::npos)
      << tokenizer_error(dir_);
  // With the result in the vocabulary (at id 96), the merge is good.
  tok["model"]["vocab"].erase(byte_level_char(96));
  tok["model"]["vocab"][a + b] = 96;
  tok["model"]["merges"] = {a + " " + b};
  write("tokenizer.json", tok);
  EXPECT_EQ(tokenizer_error(dir_), "(no error)");

  // An empty vocabulary.
  tok = good;
  tok["model"]["vocab"] = json::object();
  write("tokenizer.json", tok);
  EXPECT_NE(tokenizer_error(dir_).find("tokenizer.json: model.vocab is empty"), std::string::npos)
      << tokenizer_error(dir_);
}

// The same checks on a GGUF file's vocabulary, naming the file.
TEST(GgufVocabularySafety, BrokenVocabulariesAreRefusedNamingTheFile) {
  const std::string path = (test::fresh_test_dir() / "vocab.gguf").string();
  const auto vocab_error = [&](const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
    gguf::Writer w;
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_string_array("tokenizer.ggml.merges", merges);
    w.add_bool("tokenizer.ggml.add_bos_token", false);
    w.write(path);
    return error_of([&] { BpeTokenizer(bpe_vocabulary_from_gguf(*gguf::File::open(path))); });
  };
  EXPECT_NE(vocab_error({}, {}).find("vocab.gguf: tokenizer.ggml.tokens is empty"), std::string::npos)
      << vocab_error({}, {});
  EXPECT_NE(vocab_error({"a", "b", "a"}, {})
                .find("vocab.gguf: tokenizer.ggml.tokens: token \"a\" appears twice (ids 0 and 2)"),
            std::string::npos)
      << vocab_error({"a", "b", "a"}, {});
  EXPECT_NE(vocab_error({"a", "b"}, {"a b"}).find("vocab.gguf: tokenizer.ggml.merges[0] \"a b\": \"ab\" is not in"),
            std::string::npos)
      << vocab_error({"a", "b"}, {"a b"});
  EXPECT_NE(vocab_error({"a", "b", "ab"}, {"ab"}).find("tokenizer.ggml.merges[0] \"ab\" is not \"left right\""),
            std::string::npos);
  EXPECT_EQ(vocab_error({"a", "b", "ab"}, {"a b"}), "(no error)");
}

}  // namespace
}  // namespace kvf
