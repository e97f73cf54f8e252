// TinyShakespeare: the shared file tokenises as nanoGPT's shakespeare_char/prepare.py does
// (65-byte vocabulary, 1,003,854 / 111,540 split); encode/decode round-trip; every bad
// file, text or checkpoint vocabulary gets a one-line error naming it and the fix.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "datasets/data_files.h"
#include "datasets/tinyshakespeare.h"
#include "nn/training/vocab_json.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using noeira::test::ScopedEnv;
using noeira::test::TempDir;

namespace {

constexpr const char* kRelative = "tinyshakespeare/input.txt";
constexpr const char* kSha256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed";
constexpr int64_t kFileBytes = 1115394;

// The shared data: $NOEIRA_DATA as ctest sets it, else ../shared/data beside the source.
fs::path shared_data() {
  if (const char* env = std::getenv("NOEIRA_DATA"); env && *env) return env;
  return fs::path(NOEIRA_SOURCE_DIR) / ".." / "shared" / "data";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

// The shared file's bytes; a missing or different copy fails the test by name.
const std::string& shared_text() {
  static const std::string text = read_text(shared_data() / kRelative);
  if (static_cast<int64_t>(text.size()) != kFileBytes)
    FAIL("the shared TinyShakespeare file " << (shared_data() / kRelative) << " is missing or "
         << text.size() << " bytes, not " << kFileBytes << " (set NOEIRA_DATA to shared/data)");
  return text;
}

// The shared file loaded through load_tinyshakespeare, once per process.
const TokenCorpus& shakespeare() {
  shared_text();  // fails by name first when the file is missing
  static const Result<TokenCorpus> corpus = [] {
    TempDir cache;
    DataSource source;
    source.allow_download = false;
    source.cache_dir = cache.path();
    source.data_dir = shared_data();
    return load_tinyshakespeare(source);
  }();
  INFO((corpus.ok() ? std::string() : corpus.error().message));
  REQUIRE(corpus.ok());
  return corpus.value();
}

// A data source that finds only `dir` (NOEIRA_DATA unset by the caller), downloads off.
DataSource only(const TempDir& dir) {
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir.path();
  source.cache_dir = dir / "cache";
  return source;
}

std::string one_line(const Error& e) {
  INFO(e.message);
  CHECK(e.message.find('\n') == std::string::npos);
  return e.message;
}

}  // namespace

// ---- the shared file ----

TEST_CASE("tinyshakespeare: 65-byte vocabulary and the 1003854 / 111540 split of prepare.py",
          "[tinyshakespeare]") {
  const TokenCorpus& c = shakespeare();
  CHECK(c.name == "tinyshakespeare");
  REQUIRE(c.vocab.size() == 65u);
  CHECK(std::string(c.vocab.begin(), c.vocab.end()) ==
        "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  CHECK(c.train.size() == 1003854u);
  CHECK(c.val.size() == 111540u);
  CHECK(token_train_count(kFileBytes) == 1003854);

  // prepare.py's ids: "First Citizen:\nBefor" and, at the split, "?\n\nGREMIO:".
  const std::vector<int32_t> first20 = {18, 47, 56, 57, 58, 1,  15, 47, 58, 47,
                                        64, 43, 52, 10, 0,  14, 43, 44, 53, 56};
  CHECK(std::vector<int32_t>(c.train.begin(), c.train.begin() + 20) == first20);
  CHECK(std::vector<int32_t>(c.val.begin(), c.val.begin() + 10) ==
        std::vector<int32_t>{12, 0, 0, 19, 30, 17, 25, 21, 27, 10});

  // Every id in range, and the two halves decode back to the file.
  const std::string& text = shared_text();
  CHECK(decode(c, c.train) == text.substr(0, 1003854));
  CHECK(decode(c, c.val) == text.substr(1003854));
}

TEST_CASE("tinyshakespeare: decode(encode(x)) == x", "[tinyshakespeare]") {
  const TokenCorpus& c = shakespeare();
  const std::vector<std::string> texts = {
      "First Citizen:\nBefore we proceed any further, hear me speak.\n", "", "\n",
      "zZ$&3;?'-,.:! "};
  for (const std::string& x : texts) {
    auto ids = encode(c, x);
    INFO(x);
    REQUIRE(ids.ok());
    CHECK(ids->size() == x.size());
    CHECK(decode(c, *ids) == x);
  }
  auto all = encode(c, shared_text());
  REQUIRE(all.ok());
  std::vector<int32_t> joined = c.train;
  joined.insert(joined.end(), c.val.begin(), c.val.end());
  CHECK(*all == joined);
  // Out-of-range ids (never produced by sampling over the vocabulary) read as '?'.
  CHECK(decode(c, std::vector<int32_t>{18, -1, 65, 47}) == "F??i");
}

TEST_CASE("tinyshakespeare: the data file entry names the path and its sha256 and URL",
          "[tinyshakespeare]") {
  const DataFile f = tinyshakespeare_file();
  CHECK(f.relative_path == kRelative);
  CHECK(f.sha256 == kSha256);
  CHECK(f.urls == std::vector<std::string>{
                      "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/"
                      "tinyshakespeare/input.txt"});
}

// ---- small texts ----

TEST_CASE("read_token_corpus: sorted byte vocabulary and the int(n * 0.9) split",
          "[tinyshakespeare]") {
  TempDir dir;
  // 20 bytes: train 18, val 2; bytes above 0x7f sort after ASCII (unsigned order).
  const std::string text = std::string("ba\xff") + "ab\x01" + "abcabcabcabca" + "\n";
  REQUIRE(text.size() == 20u);
  write_text(dir / "t.txt", text);
  auto c = read_token_corpus(dir / "t.txt", "tiny");
  REQUIRE(c.ok());
  CHECK(c->name == "tiny");
  CHECK(std::string(c->vocab.begin(), c->vocab.end()) == std::string("\x01\nabc\xff"));
  CHECK(c->train.size() == 18u);
  CHECK(c->val.size() == 2u);
  CHECK(std::vector<int32_t>(c->train.begin(), c->train.begin() + 6) ==
        std::vector<int32_t>{3, 2, 5, 2, 3, 0});
  CHECK(c->val == std::vector<int32_t>{2, 1});
  // Python's int(n * 0.9) for a few n (11 is the smallest with two val tokens).
  for (auto [n, train] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 0}, {10, 9}, {11, 9}, {20, 18}, {21, 18}, {1115394, 1003854}})
    CHECK(token_train_count(n) == train);

  write_text(dir / "eleven.txt", "abcdefghijk");
  auto eleven = read_token_corpus(dir / "eleven.txt", "eleven");
  REQUIRE(eleven.ok());
  CHECK(eleven->train.size() == 9u);
  CHECK(eleven->val.size() == 2u);
}

// ---- errors ----

TEST_CASE("tinyshakespeare: a missing file says where it looked and the fix",
          "[tinyshakespeare]") {
  TempDir dir;
  ScopedEnv no_env("NOEIRA_DATA", nullptr);
  auto c = load_tinyshakespeare(only(dir));
  REQUIRE_FALSE(c.ok());
  const std::string msg = one_line(c.error());
  CHECK_THAT(msg, Contains("tinyshakespeare/input.txt not found") &&
                      Contains((dir / kRelative).string()) && Contains("downloads are off") &&
                      Contains("NOEIRA_DATA") && Contains("--data-dir"));

  auto direct = read_token_corpus(dir / "nowhere.txt", "x");
  REQUIRE_FALSE(direct.ok());
  CHECK_THAT(one_line(direct.error()),
             Contains((dir / "nowhere.txt").string()) && Contains("does not exist"));
}

TEST_CASE("tinyshakespeare: a modified copy fails its sha256 check by name",
          "[tinyshakespeare]") {
  std::string text = shared_text();  // before NOEIRA_DATA, which names it, is unset
  TempDir dir;
  ScopedEnv no_env("NOEIRA_DATA", nullptr);
  text[1000] = text[1000] == 'e' ? 'a' : 'e';
  write_text(dir / kRelative, text);
  auto c = load_tinyshakespeare(only(dir));
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(one_line(c.error()),
             Contains((dir / kRelative).string()) && Contains("sha256") &&
                 Contains(std::string("expected ") + kSha256) && Contains("--data-dir"));
}

TEST_CASE("read_token_corpus: an empty or too-short file is an error naming it",
          "[tinyshakespeare]") {
  TempDir dir;
  write_text(dir / "empty.txt", "");
  auto empty = read_token_corpus(dir / "empty.txt", "x");
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(one_line(empty.error()),
             Contains((dir / "empty.txt").string()) && Contains("is empty"));

  write_text(dir / "ten.txt", "abcdefghij");  // int(10 * 0.9) = 9: one val token
  auto ten = read_token_corpus(dir / "ten.txt", "x");
  REQUIRE_FALSE(ten.ok());
  CHECK_THAT(one_line(ten.error()), Contains((dir / "ten.txt").string()) &&
                                        Contains("10 bytes") && Contains("too few") &&
                                        Contains("longer text"));
}

TEST_CASE("encode: a character outside the vocabulary is named with its position",
          "[tinyshakespeare]") {
  const TokenCorpus& c = shakespeare();
  auto tab = encode(c, "Hello\tworld");
  REQUIRE_FALSE(tab.ok());
  CHECK_THAT(one_line(tab.error()), Contains("character \\x09 at position 5") &&
                                        Contains("tinyshakespeare vocabulary (65 characters)"));

  auto tilde = encode(c, "Hi ~ there");
  REQUIRE_FALSE(tilde.ok());
  CHECK_THAT(one_line(tilde.error()), Contains("character '~' at position 3"));

  auto accent = encode(c, "caf\xc3\xa9");  // UTF-8 e-acute: its first byte
  REQUIRE_FALSE(accent.ok());
  CHECK_THAT(one_line(accent.error()), Contains("character \\xC3 at position 3"));
}

TEST_CASE("check_vocab: a checkpoint's vocabulary must match the corpus",
          "[tinyshakespeare]") {
  const TokenCorpus& c = shakespeare();
  CHECK(check_vocab(c.vocab, c).ok());

  std::vector<char> shorter(c.vocab.begin(), c.vocab.end() - 1);
  Status size = check_vocab(shorter, c);
  REQUIRE_FALSE(size.ok());
  CHECK_THAT(one_line(size.error()),
             Contains("the checkpoint's vocabulary has 64 characters, this corpus "
                      "(tinyshakespeare) 65") &&
                 Contains("different text"));

  std::vector<char> changed = c.vocab;
  REQUIRE(changed[3] == '$');
  changed[3] = '#';
  Status differs = check_vocab(changed, c);
  REQUIRE_FALSE(differs.ok());
  CHECK_THAT(one_line(differs.error()), Contains("at id 3: '#' there, '$' here"));

  changed = c.vocab;
  changed[0] = '\t';
  Status control = check_vocab(changed, c);
  REQUIRE_FALSE(control.ok());
  CHECK_THAT(one_line(control.error()), Contains("at id 0: \\x09 there, \\x0A here"));
}

// `sample` read each entry with get<int>(), so a checkpoint whose vocab held a string or a
// float threw past it; a repeated or unordered byte made encode and decode disagree.
TEST_CASE("vocab_from_json: a checkpoint's vocabulary is strictly ascending byte values",
          "[tinyshakespeare]") {
  const TokenCorpus& c = shakespeare();
  Result<std::vector<char>> back = vocab_from_json(vocab_to_json(c.vocab));
  REQUIRE(back.ok());
  CHECK(*back == c.vocab);
  CHECK(vocab_to_json(c.vocab).at(0) == 10);  // '\n', as a number: any byte fits

  const std::vector<std::pair<const char*, const char*>> bad = {
      {R"("abc")", "non-empty list of byte values, found string"},
      {"[]", "found an empty list"},
      {R"([10, "a"])", "entry 1 is \"a\", not a byte value"},
      {"[10, 256]", "entry 1 is 256"},
      {"[-1]", "entry 0 is -1"},
      {"[10, 10.5]", "entry 1 is 10.5"},
      {"[10, 10]", "entry 1 (10) does not follow 10"},
      {"[32, 10]", "strictly ascending"}};
  for (const auto& [text, why] : bad) {
    Result<std::vector<char>> v = vocab_from_json(nlohmann::json::parse(text));
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.error().message, Contains(why));
  }
}
