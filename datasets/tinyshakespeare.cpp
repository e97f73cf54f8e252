#include "datasets/tinyshakespeare.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include "datasets/quoted_path.h"

namespace noeira {
namespace {

namespace fs = std::filesystem;

// karpathy/char-rnn @ 6f9487a6, data/tinyshakespeare/input.txt (shared/data/PROVENANCE.txt).
constexpr const char* kRelativePath = "tinyshakespeare/input.txt";
constexpr const char* kSha256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed";
constexpr const char* kUrl =
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt";

// A model needs one (context, next token) pair at least: two tokens.
constexpr int64_t kMinSplitTokens = 2;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// 'a' for printable ASCII, else \xNN (so '\n' reads \x0A): one line, whatever the byte.
std::string describe_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("\\x") + kHex[u >> 4] + kHex[u & 0xf];
}

Result<std::vector<char>> read_bytes(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error("text file " + quoted(path) +
                      " does not exist; check the path, or point --data-dir or NOEIRA_DATA at "
                      "a directory holding it");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return make_error("cannot read " + quoted(path) + ": " + ec.message());
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(path.c_str(), "rb"));
  if (!in) return make_error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  std::vector<char> bytes(static_cast<size_t>(size));
  if (std::fread(bytes.data(), 1, bytes.size(), in.get()) != bytes.size())
    return make_error(std::ferror(in.get())
                          ? "cannot read " + quoted(path) + ": " + std::strerror(errno)
                          : quoted(path) + " became shorter while being read; read it again");
  return bytes;
}

}  // namespace

DataFile tinyshakespeare_file() { return DataFile{kRelativePath, kSha256, {kUrl}}; }

int64_t token_train_count(int64_t n) {
  // Python's int(n * 0.9): the double product, truncated. Equal to n * 9 / 10 for every
  // n below 10^15 or so (checked to 3,000,000), but computed as prepare.py does.
  return static_cast<int64_t>(static_cast<double>(n) * 0.9);
}

Result<TokenCorpus> read_token_corpus(const fs::path& path, std::string name) {
  Result<std::vector<char>> bytes = read_bytes(path);
  if (!bytes) return bytes.error();
  const auto n = static_cast<int64_t>(bytes->size());
  if (n == 0)
    return make_error(quoted(path) + " is empty (an interrupted download or copy?); replace it "
                      "with a complete copy (a data set's file: delete it to download it "
                      "again), or point --data-dir at a good copy");
  const int64_t n_train = token_train_count(n);
  if (n - n_train < kMinSplitTokens)
    return make_error(quoted(path) + " holds " + std::to_string(n) +
                      " bytes, too few to split into train and val (the last 10%, val, needs " +
                      "at least 2 characters: 11 bytes or more); use a longer text");

  // The vocabulary: every byte value present, in unsigned order; ids index it.
  std::array<bool, 256> present{};
  for (char c : *bytes) present[static_cast<unsigned char>(c)] = true;
  TokenCorpus corpus;
  corpus.name = std::move(name);
  std::array<int32_t, 256> id{};
  for (int b = 0; b < 256; ++b) {
    if (!present[static_cast<size_t>(b)]) continue;
    id[static_cast<size_t>(b)] = static_cast<int32_t>(corpus.vocab.size());
    corpus.vocab.push_back(static_cast<char>(b));
  }
  corpus.train.reserve(static_cast<size_t>(n_train));
  corpus.val.reserve(static_cast<size_t>(n - n_train));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = id[static_cast<unsigned char>((*bytes)[static_cast<size_t>(i)])];
    (i < n_train ? corpus.train : corpus.val).push_back(t);
  }
  return corpus;
}

Result<TokenCorpus> load_tinyshakespeare(const DataSource& source) {
  Result<fs::path> path = locate(tinyshakespeare_file(), source);
  if (!path) return path.error();
  return read_token_corpus(*path, "tinyshakespeare");
}

Result<std::vector<int32_t>> encode(const TokenCorpus& corpus, std::string_view text) {
  std::array<int32_t, 256> id;
  id.fill(-1);
  for (size_t i = 0; i < corpus.vocab.size(); ++i)
    id[static_cast<unsigned char>(corpus.vocab[i])] = static_cast<int32_t>(i);
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const int32_t t = id[static_cast<unsigned char>(text[i])];
    if (t < 0)
      return make_error("character " + describe_byte(text[i]) + " at position " +
                        std::to_string(i) + " is not in the " + corpus.name + " vocabulary (" +
                        std::to_string(corpus.vocab.size()) +
                        " characters); use only characters that occur in the training text");
    ids.push_back(t);
  }
  return ids;
}

std::string decode(const TokenCorpus& corpus, std::span<const int32_t> ids) {
  std::string text;
  text.reserve(ids.size());
  const auto size = static_cast<int64_t>(corpus.vocab.size());
  for (int32_t t : ids)
    text += (t >= 0 && t < size) ? corpus.vocab[static_cast<size_t>(t)] : '?';
  return text;
}

Status check_vocab(const std::vector<char>& saved, const TokenCorpus& corpus) {
  constexpr const char* kFix =
      "it was trained on a different text: use the text it was trained on, or train a new "
      "model on this one";
  if (saved.size() != corpus.vocab.size())
    return make_error("the checkpoint's vocabulary has " + std::to_string(saved.size()) +
                      " characters, this corpus (" + corpus.name + ") " +
                      std::to_string(corpus.vocab.size()) + "; " + kFix);
  for (size_t i = 0; i < saved.size(); ++i)
    if (saved[i] != corpus.vocab[i])
      return make_error("the checkpoint's vocabulary differs from this corpus's (" +
                        corpus.name + ") at id " + std::to_string(i) + ": " +
                        describe_byte(saved[i]) + " there, " + describe_byte(corpus.vocab[i]) +
                        " here; " + kFix);
  return {};
}

}  // namespace noeira
