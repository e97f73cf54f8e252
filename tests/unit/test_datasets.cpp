// Datasets: the real MNIST files load with their published contents; every kind of bad
// file gets its own one-line error naming the file; downloads are verified and atomic.
#include <catch2/catch.hpp>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>

#include "datasets/data_files.h"
#include "datasets/idx.h"
#include "datasets/mnist.h"
#include "tests/support/download_guard.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

using noeira::test::downloads_or_skip;
using noeira::test::ScopedEnv;
using noeira::test::TempDir;

namespace {

void write_bytes(const fs::path& p, const Bytes& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_gz(const fs::path& p, const Bytes& bytes) {
  gzFile gz = gzopen(p.c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(gz) == Z_OK);
}

void put_u32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

Bytes idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes out;
  put_u32(out, magic);
  for (uint32_t d : dims) put_u32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// Three 2x2 images labelled 0, 1, 2: a valid pair to start each bad case from.
struct TinySet {
  fs::path images, labels;
};
TinySet write_tiny_set(const TempDir& dir) {
  TinySet set{dir / "images.gz", dir / "labels.gz"};
  write_gz(set.images, idx_bytes(0x803, {3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  write_gz(set.labels, idx_bytes(0x801, {3}, {0, 1, 2}));
  return set;
}

std::string load_error(const TinySet& set, int num_classes = 10) {
  auto result = load_idx_gz(set.images, set.labels, "tiny", num_classes);
  REQUIRE_FALSE(result.ok());
  INFO(result.error().message);
  CHECK(result.error().message.find('\n') == std::string::npos);  // one line
  return result.error().message;
}

// The real data: $NOEIRA_DATA as ctest sets it, else ../shared/data beside the source.
DataSource real_data(const TempDir& cache) {
  DataSource source;
  source.allow_download = false;
  source.cache_dir = cache.path();
#ifdef NOEIRA_SOURCE_DIR
  if (std::getenv("NOEIRA_DATA") == nullptr)
    source.data_dir = fs::path(NOEIRA_SOURCE_DIR) / ".." / "shared" / "data";
#endif
  return source;
}

uint64_t pixel_sum(const ImageDataset& ds) {
  return std::accumulate(ds.pixels.begin(), ds.pixels.end(), uint64_t{0});
}

std::vector<int32_t> first_labels(const ImageDataset& ds, size_t n) {
  return {ds.labels.begin(), ds.labels.begin() + static_cast<std::ptrdiff_t>(n)};
}

bool has_part_file(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".part.") != std::string::npos) return true;
  return false;
}

using Catch::Matchers::Contains;

}  // namespace

// ---- real data ----

TEST_CASE("MNIST loads with its published contents", "[datasets]") {
  TempDir cache;
  auto split = load_mnist(MnistVariant::kMnist, real_data(cache));
  REQUIRE(split.ok());
  const ImageDataset& train = split->train;
  const ImageDataset& test = split->test;
  CHECK(train.name == "mnist");
  CHECK(train.count == 60000);
  CHECK(test.count == 10000);
  CHECK(train.sample_shape == std::vector<int64_t>{28, 28});
  CHECK(train.num_classes == 10);
  CHECK(train.pixels.size() == 60000u * 28 * 28);
  CHECK(test.labels.size() == 10000u);
  CHECK(first_labels(train, 5) == std::vector<int32_t>{5, 0, 4, 1, 9});
  CHECK(first_labels(test, 5) == std::vector<int32_t>{7, 2, 1, 0, 4});
  // Mean pixel 33.32 / 33.79 (the familiar 0.1307 / 0.1325 of 255).
  CHECK(pixel_sum(train) == 1567298545u);
  CHECK(pixel_sum(test) == 264923200u);
  CHECK_FALSE(has_part_file(cache.path()));
}

TEST_CASE("Fashion-MNIST loads from the Debian package's directory", "[datasets]") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    WARN("dataset-fashion-mnist is not installed; skipping (apt-get install "
         "dataset-fashion-mnist)");
    return;
  }
  TempDir cache;
  const MnistFiles files = mnist_files(MnistVariant::kFashion);
  DataSource source = real_data(cache);
  source.system_dirs = files.system_dirs;
  auto where = locate(files.train_images, source);
  REQUIRE(where.ok());  // the Debian copy verifies through also_accepted_sha256
  if (!fs::exists(fs::path(std::getenv("NOEIRA_DATA") ? std::getenv("NOEIRA_DATA") : "") /
                  files.train_images.relative_path))
    CHECK(where->parent_path() == fs::path("/usr/share/datasets/fashion-mnist"));
  auto split = load_mnist(MnistVariant::kFashion, real_data(cache));
  REQUIRE(split.ok());
  CHECK(split->train.name == "fashion-mnist");
  CHECK(split->train.count == 60000);
  CHECK(split->test.count == 10000);
  CHECK(split->test.sample_shape == std::vector<int64_t>{28, 28});
  CHECK(first_labels(split->train, 5) == std::vector<int32_t>{9, 0, 0, 3, 0});
  CHECK(first_labels(split->test, 5) == std::vector<int32_t>{9, 2, 1, 1, 6});
  CHECK(pixel_sum(split->train) == 3431114169u);
  CHECK(pixel_sum(split->test) == 573469082u);
}

TEST_CASE("parse_mnist_variant accepts mnist and fashion-mnist only", "[datasets]") {
  CHECK(parse_mnist_variant("mnist").value() == MnistVariant::kMnist);
  CHECK(parse_mnist_variant("fashion-mnist").value() == MnistVariant::kFashion);
  auto bad = parse_mnist_variant("kmnist");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Contains("kmnist") && Contains("fashion-mnist"));
}

// ---- IDX errors ----

TEST_CASE("load_idx_gz reads a valid pair", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  auto ds = load_idx_gz(set.images, set.labels, "tiny", 3);
  REQUIRE(ds.ok());
  CHECK(ds->count == 3);
  CHECK(ds->sample_shape == std::vector<int64_t>{2, 2});
  CHECK(ds->pixels == Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(ds->labels == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("load_idx_gz: a missing file is named", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  fs::remove(set.labels);
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.labels.string()) && Contains("does not exist"));
}

TEST_CASE("load_idx_gz: a file that is not gzip is named", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  write_bytes(set.images, idx_bytes(0x803, {1, 2, 2}, {1, 2, 3, 4}));  // raw, uncompressed
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.images.string()) && Contains("not a gzip file"));
}

TEST_CASE("load_idx_gz: a truncated gzip stream is named", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  Bytes gz = read_bytes(set.images);
  gz.resize(gz.size() - 10);  // loses the trailer and some data
  write_bytes(set.images, gz);
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.images.string()) && Contains("truncated") &&
                      Contains("gzip stream ends early"));
}

TEST_CASE("load_idx_gz: a CRC mismatch is a corrupt gzip stream", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  Bytes gz = read_bytes(set.labels);
  gz[gz.size() - 8] ^= 0xff;  // first byte of the CRC32 trailer
  write_bytes(set.labels, gz);
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.labels.string()) && Contains("corrupt gzip stream"));
}

TEST_CASE("load_idx_gz: fewer bytes than the header's dims imply", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  write_gz(set.images, idx_bytes(0x803, {3, 2, 2}, {1, 2, 3, 4, 5}));  // 5 of 12 bytes
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.images.string()) && Contains("truncated") &&
                      Contains("12 data bytes but it holds 5"));
}

TEST_CASE("load_idx_gz: more bytes than the header's dims imply", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  write_gz(set.labels, idx_bytes(0x801, {3}, {0, 1, 2, 3}));
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.labels.string()) && Contains("more data"));
}

TEST_CASE("load_idx_gz: a wrong magic number is named", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  std::swap(set.images, set.labels);
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.images.string()) && Contains("magic 0x00000801") &&
                      Contains("0x00000803"));
}

TEST_CASE("load_idx_gz: image and label counts must match", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  write_gz(set.labels, idx_bytes(0x801, {2}, {0, 1}));
  std::string msg = load_error(set);
  CHECK_THAT(msg, Contains(set.labels.string()) && Contains("2 labels") &&
                      Contains("3 images"));
}

TEST_CASE("load_idx_gz: a label beyond num_classes is named", "[datasets]") {
  TempDir dir;
  TinySet set = write_tiny_set(dir);
  std::string msg = load_error(set, 2);  // label 2 at index 2 is out of range
  CHECK_THAT(msg, Contains(set.labels.string()) && Contains("label 2 at index 2") &&
                      Contains("2 classes"));
}

// ---- locating, verifying, downloading ----

TEST_CASE("sha256_file matches known digests", "[datasets]") {
  TempDir dir;
  write_bytes(dir / "empty", {});
  CHECK(sha256_file(dir / "empty").value() ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  write_bytes(dir / "abc", {'a', 'b', 'c'});
  CHECK(sha256_file(dir / "abc").value() ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK_FALSE(sha256_file(dir / "missing").ok());
}

TEST_CASE("locate: search order is data dir, NOEIRA_DATA, system dirs, cache", "[datasets]") {
  TempDir dir;
  const std::string rel = "noeira-test-set/file.gz";
  const Bytes data_dir_copy{'d'}, env_copy{'e'}, system_copy{'s'}, cache_copy{'c'};
  write_bytes(dir / "data" / rel, data_dir_copy);
  write_bytes(dir / "env" / rel, env_copy);
  write_bytes(dir / "system" / "file.gz", system_copy);  // found by file name alone
  write_bytes(dir / "cache" / rel, cache_copy);
  ScopedEnv env("NOEIRA_DATA", (dir / "env").c_str());

  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.system_dirs = {dir / "system"};
  source.cache_dir = dir / "cache";
  auto expect_found = [&](const Bytes& contents, const fs::path& where) {
    DataFile file{rel, sha256_file(where).value(), {}};
    auto found = locate(file, source);
    REQUIRE(found.ok());
    CHECK(*found == where);
    CHECK(read_bytes(*found) == contents);
  };
  expect_found(data_dir_copy, dir / "data" / rel);
  source.data_dir.reset();
  expect_found(env_copy, dir / "env" / rel);
  fs::remove(dir / "env" / rel);
  expect_found(system_copy, dir / "system" / "file.gz");
  source.system_dirs.clear();
  expect_found(cache_copy, dir / "cache" / rel);
}

TEST_CASE("locate: a sha256 mismatch names the file, both digests and the fix", "[datasets]") {
  TempDir dir;
  const std::string rel = "noeira-test-set/file.gz";
  write_bytes(dir / "data" / rel, {'a', 'b', 'c'});
  const std::string expected(64, '0');
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  auto found = locate(DataFile{rel, expected, {}}, source);
  REQUIRE_FALSE(found.ok());
  CHECK_THAT(found.error().message,
             Contains((dir / "data" / rel).string()) &&
                 Contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") &&
                 Contains(expected) && Contains("delete it to re-download") &&
                 Contains("--data-dir"));
}

TEST_CASE("locate: an also-accepted sha256 (a repacked copy) verifies", "[datasets]") {
  TempDir dir;
  const std::string rel = "noeira-test-set/file.gz";
  write_bytes(dir / "data" / rel, {'a', 'b', 'c'});
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  DataFile file{rel, std::string(64, '0'), {},
                {"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}};
  CHECK(locate(file, source).ok());
}

TEST_CASE("locate: nothing found with downloads off says where it looked", "[datasets]") {
  TempDir dir;
  const std::string rel = "noeira-test-set/absent.gz";
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  auto found = locate(DataFile{rel, std::string(64, '0'), {"file:///nonexistent"}}, source);
  REQUIRE_FALSE(found.ok());
  CHECK_THAT(found.error().message, Contains((dir / "data" / rel).string()) &&
                                        Contains((dir / "cache" / rel).string()) &&
                                        Contains("NOEIRA_DATA") && Contains("--data-dir"));
}

TEST_CASE("locate: downloads a file:// URL into the cache, trying URLs in turn",
          "[datasets]") {
  if (!downloads_or_skip()) return;
  TempDir dir;
  const Bytes contents{'h', 'e', 'l', 'l', 'o'};
  write_bytes(dir / "remote" / "file.gz", contents);
  const std::string rel = "noeira-test-set/file.gz";
  DataFile file{rel, sha256_file(dir / "remote" / "file.gz").value(),
                {"file://" + (dir / "remote" / "missing.gz").string(),
                 "file://" + (dir / "remote" / "file.gz").string()}};
  DataSource source;
  source.cache_dir = dir / "cache";

  auto found = locate(file, source);
  REQUIRE(found.ok());
  CHECK(*found == dir / "cache" / rel);
  CHECK(read_bytes(*found) == contents);
  CHECK_FALSE(has_part_file(dir / "cache"));
  // The second call finds the cached copy without downloading.
  fs::remove(dir / "remote" / "file.gz");
  auto again = locate(file, source);
  REQUIRE(again.ok());
  CHECK(*again == dir / "cache" / rel);
}

TEST_CASE("locate: a download with the wrong sha256 leaves nothing behind", "[datasets]") {
  if (!downloads_or_skip()) return;
  TempDir dir;
  write_bytes(dir / "remote" / "file.gz", {'b', 'a', 'd'});
  const std::string rel = "noeira-test-set/file.gz";
  DataFile file{rel, std::string(64, '0'), {"file://" + (dir / "remote" / "file.gz").string()}};
  DataSource source;
  source.cache_dir = dir / "cache";

  auto found = locate(file, source);
  REQUIRE_FALSE(found.ok());
  CHECK_THAT(found.error().message, Contains("file.gz") && Contains(std::string(64, '0')) &&
                                        Contains("NOEIRA_DATA"));
  CHECK(found.error().message.find('\n') == std::string::npos);
  CHECK_FALSE(fs::exists(dir / "cache" / rel));
  // The folders made for the download go with it (a failed lookup leaves no folder).
  CHECK_FALSE(fs::exists(dir / "cache"));
}

TEST_CASE("locate: nothing found with downloads on tries them, or says this build has none",
          "[datasets]") {
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  const std::string rel = "noeira-test-set/absent.gz";
  DataSource source;  // downloads allowed
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  auto found = locate(DataFile{rel, std::string(64, '0'),
                               {"file://" + (dir / "remote" / "absent.gz").string()}},
                      source);
  REQUIRE_FALSE(found.ok());
  const std::string& msg = found.error().message;
  CHECK(msg.find('\n') == std::string::npos);
  CHECK_THAT(msg, Contains(rel) && Contains((dir / "data" / rel).string()) &&
                      Contains("NOEIRA_DATA") && Contains("--data-dir"));
  if (downloads_supported()) {
    CHECK_THAT(msg, Contains("cannot find or download") && Contains("absent.gz"));
  } else {
    CHECK_THAT(msg, Contains("no download support") && Contains("GPU bundle"));
    CHECK_FALSE(fs::exists(dir / "cache"));  // no cache folder made for a download it cannot do
  }
}

namespace {

// Every path under `root`, sorted: what a data directory holds.
std::vector<std::string> tree(const fs::path& root) {
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root))
    out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("A failed data lookup leaves the data directory as it was", "[datasets]") {
  // As when NOEIRA_DATA points at ../shared/data and a data set is missing with no network:
  // NOEIRA_DATA is then also the cache, and a failed download made empty mnist/ and
  // tinyshakespeare/ folders in it.
  TempDir dir;
  const fs::path data = dir / "data";
  write_bytes(data / "other" / "kept.bin", {'k'});
  const std::vector<std::string> before = tree(data);
  ScopedEnv env("NOEIRA_DATA", data.c_str());
  for (bool allow : {true, false}) {
    DataSource source;
    source.allow_download = allow;
    // A URL that fails (no such file), and a set nested two folders deep.
    auto found = locate(DataFile{"missing-set/sub/file.gz", std::string(64, '0'),
                                 {"file://" + (dir / "remote" / "absent.gz").string()}},
                        source);
    REQUIRE_FALSE(found.ok());
    CHECK(tree(data) == before);
  }
}

TEST_CASE("default_cache_dir: NOEIRA_DATA, then XDG_CACHE_HOME, then HOME", "[datasets]") {
  {
    ScopedEnv data("NOEIRA_DATA", "/data/here");
    CHECK(default_cache_dir() == fs::path("/data/here"));
  }
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(default_cache_dir() == fs::path("/xdg/noeira"));
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/someone");
  CHECK(default_cache_dir() == fs::path("/home/someone/.cache/noeira"));
}
