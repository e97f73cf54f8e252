// CIFAR-10's archive: listed and extracted through libarchive, every kind of bad archive
// gets its own one-line error naming it and leaves nothing behind; the full data set is
// downloaded (file:// here), checked by md5 and sha256, extracted and read.
#include <archive_entry.h>  // AE_IF* constants only
#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "datasets/archive.h"
#include "datasets/catalog.h"
#include "datasets/cifar10.h"
#include "datasets/data_files.h"
#include "models/recipe.h"
#include "models/recipe_data.h"
#include "tests/support/cifar_fixture.h"
#include "tests/support/download_guard.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"
#include "tests/support/tar_writer.h"
#include "tests/support/scoped_env.h"

using namespace noeira;
using noeira::test::TempDir;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using Catch::Matchers::Contains;

using noeira::test::downloads_or_skip;
using noeira::test::ScopedEnv;
using namespace noeira::test::cifar;

// ---- archives through libarchive ----

TEST_CASE("list_archive and extract_members read a tar.gz through libarchive", "[cifar10]") {
  TempDir dir;
  write_tar_gz(dir / "c.tar.gz", small_cifar_members());
  auto entries = list_archive(dir / "c.tar.gz");
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 8u);  // regular files only: not the directory entry
  CHECK((*entries)[0].path == "cifar-10-batches-bin/batches.meta.txt");
  CHECK((*entries)[1].path == "cifar-10-batches-bin/data_batch_1.bin");
  CHECK((*entries)[1].size == kSmall * kRecord);

  const fs::path dest = dir / "out" / "cifar-10-batches-bin";
  REQUIRE(extract_members(dir / "c.tar.gz", wanted_members(), dest, kSmallCap).ok());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dest)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin",
                                          "data_batch_3.bin", "data_batch_4.bin",
                                          "data_batch_5.bin", "test_batch.bin"});
  CHECK(read_bytes(dest / "data_batch_3.bin") == records(raw_train(), 2 * kSmall, kSmall));
  CHECK(read_bytes(dest / "test_batch.bin") == records(raw_test(), 0, kSmall));
  CHECK_FALSE(has_leftovers(dir / "out"));
  // Already there: refused, and left as it is.
  CHECK_THAT(extract_members(dir / "c.tar.gz", wanted_members(), dest, kSmallCap).error().message,
             Contains(dest.string()) && Contains("already exists"));
  CHECK(fs::exists(dest / "test_batch.bin"));
}

TEST_CASE("extract_members: a missing member names the archive; nothing is left",
          "[cifar10]") {
  TempDir dir;
  std::vector<Member> members = small_cifar_members();
  members.erase(members.begin() + 4);  // data_batch_3.bin
  write_tar_gz(dir / "c.tar.gz", members);
  const std::string msg = extract_error(dir / "c.tar.gz", dir / "out" / "batches");
  CHECK_THAT(msg, Contains((dir / "c.tar.gz").string()) &&
                      Contains("no member cifar-10-batches-bin/data_batch_3.bin"));
}

TEST_CASE("extract_members: a member larger than the cap is refused before it fills the disk",
          "[cifar10]") {
  TempDir dir;
  std::vector<Member> members = small_cifar_members();
  // One byte over the cap (the header says so; the data-length check backs it up).
  members[3].bytes.resize(static_cast<size_t>(kSmallCap) + 1);
  write_tar_gz(dir / "c.tar.gz", members);
  const std::string msg = extract_error(dir / "c.tar.gz", dir / "out" / "batches");
  CHECK_THAT(msg, Contains((dir / "c.tar.gz").string()) &&
                      Contains("cifar-10-batches-bin/data_batch_2.bin of " +
                               std::to_string(kSmallCap + 1) + " bytes") &&
                      Contains("at most " + std::to_string(kSmallCap)) &&
                      Contains("not the expected archive"));
}

TEST_CASE("extract_members: a truncated archive is named; nothing is left", "[cifar10]") {
  TempDir dir;
  write_tar_gz(dir / "c.tar.gz", small_cifar_members());
  Bytes bytes = read_bytes(dir / "c.tar.gz");
  bytes.resize(bytes.size() / 2);
  write_bytes(dir / "c.tar.gz", bytes);
  const std::string msg = extract_error(dir / "c.tar.gz", dir / "out" / "batches");
  CHECK_THAT(msg, Contains((dir / "c.tar.gz").string()) && Contains("truncated") &&
                      Contains("libarchive"));
  CHECK_FALSE(list_archive(dir / "c.tar.gz").ok());
}

TEST_CASE("extract_members: a corrupt archive is named; nothing is left", "[cifar10]") {
  TempDir dir;
  write_tar_gz(dir / "c.tar.gz", small_cifar_members());
  Bytes bytes = read_bytes(dir / "c.tar.gz");
  for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 64; ++i) bytes[i] ^= 0x5a;
  write_bytes(dir / "c.tar.gz", bytes);
  const std::string msg = extract_error(dir / "c.tar.gz", dir / "out" / "batches");
  CHECK_THAT(msg, Contains((dir / "c.tar.gz").string()) && Contains("corrupt") &&
                      Contains("libarchive"));
}

TEST_CASE("extract_members: not an archive, or an empty or missing file, is named",
          "[cifar10]") {
  TempDir dir;
  SECTION("plain bytes") {
    write_bytes(dir / "c.tar.gz", records(raw_test(), 0, 1));
    CHECK_THAT(extract_error(dir / "c.tar.gz", dir / "out" / "b"),
               Contains((dir / "c.tar.gz").string()) && Contains("not a tar archive"));
  }
  SECTION("gzip, but not of a tar") {
    gzFile gz = gzopen((dir / "c.tar.gz").c_str(), "wb");
    REQUIRE(gz != nullptr);
    const std::string text(2000, 'x');
    gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
    gzclose(gz);
    CHECK_THAT(extract_error(dir / "c.tar.gz", dir / "out" / "b"),
               Contains((dir / "c.tar.gz").string()) && Contains("not a tar archive"));
  }
  SECTION("empty") {
    write_bytes(dir / "c.tar.gz", {});
    CHECK_THAT(extract_error(dir / "c.tar.gz", dir / "out" / "b"),
               Contains((dir / "c.tar.gz").string()) && Contains("is empty"));
  }
  SECTION("missing") {
    CHECK_THAT(extract_error(dir / "c.tar.gz", dir / "out" / "b"),
               Contains((dir / "c.tar.gz").string()) && Contains("does not exist"));
  }
}

TEST_CASE("extract_members: a member that is a link is refused; no path escapes dest",
          "[cifar10]") {
  TempDir dir;
  SECTION("a wanted member stored as a symlink") {
    std::vector<Member> members = small_cifar_members();
    members[7] = {"cifar-10-batches-bin/test_batch.bin", {}, AE_IFLNK, "/etc/passwd"};
    write_tar_gz(dir / "c.tar.gz", members);
    CHECK_THAT(extract_error(dir / "c.tar.gz", dir / "out" / "b"),
               Contains("cifar-10-batches-bin/test_batch.bin") &&
                   Contains("not as a regular file"));
  }
  SECTION("entries with absolute or .. paths are never written") {
    std::vector<Member> members = small_cifar_members();
    members.push_back({"../escaped.bin", {1, 2, 3}});
    members.push_back({(dir / "absolute.bin").string(), {1, 2, 3}});
    members.push_back({"./cifar-10-batches-bin/../../up.bin", {1, 2, 3}});
    write_tar_gz(dir / "c.tar.gz", members);
    const fs::path dest = dir / "out" / "b";
    REQUIRE(extract_members(dir / "c.tar.gz", wanted_members(), dest, kSmallCap).ok());
    CHECK_FALSE(fs::exists(dir / "escaped.bin"));
    CHECK_FALSE(fs::exists(dir / "out" / "escaped.bin"));
    CHECK_FALSE(fs::exists(dir / "absolute.bin"));
    CHECK_FALSE(fs::exists(dir / "up.bin"));
    CHECK(std::distance(fs::directory_iterator(dest), fs::directory_iterator()) == 6);
  }
}

// ---- the full data set: download (file://), verify, extract, read ----

namespace {

// The official layout's files, with a small archive at a file:// URL.
Cifar10Files small_files(const fs::path& archive) {
  Cifar10Files f = cifar10_files();
  f.archive.urls = {"file://" + archive.string()};
  f.archive.sha256 = sha256_file(archive).value();
  f.archive.md5 = md5_file(archive).value();
  f.records_per_file = kSmall;
  return f;
}

}  // namespace

TEST_CASE("cifar10 downloads via file://, verifies, extracts with libarchive and reads",
          "[cifar10]") {
  if (!downloads_or_skip()) return;  // the archive comes from a file:// URL
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  write_tar_gz(dir / "remote" / "cifar-10-binary.tar.gz", small_cifar_members());
  const Cifar10Files files = small_files(dir / "remote" / "cifar-10-binary.tar.gz");
  DataSource source;
  source.data_dir = dir / "data";  // empty: nothing there
  source.cache_dir = dir / "cache";

  auto split = load_cifar10(files, source);
  REQUIRE(split.ok());
  CHECK(split->train.name == "cifar10");
  CHECK(split->train.count == 5 * kSmall);
  CHECK(split->test.count == kSmall);
  CHECK(split->train.sample_shape == std::vector<int64_t>{3, 32, 32});
  // Batches in order 1..5: the train set is the subset's first 5 * kSmall records.
  for (int64_t i = 0; i < 5 * kSmall; ++i) {
    CHECK(split->train.labels[static_cast<size_t>(i)] == raw_train()[static_cast<size_t>(i * kRecord)]);
    CHECK(std::equal(raw_train().begin() + i * kRecord + 1, raw_train().begin() + (i + 1) * kRecord,
                     split->train.pixels.begin() + i * 3072));
  }
  CHECK(fs::exists(dir / "cache" / "cifar10" / "cifar-10-binary.tar.gz"));
  CHECK(fs::exists(dir / "cache" / "cifar10" / "cifar-10-batches-bin" / "test_batch.bin"));
  CHECK_FALSE(fs::exists(dir / "cache" / "cifar10" / "cifar-10-batches-bin" / "readme.html"));
  CHECK_FALSE(has_leftovers(dir / "cache"));

  // Second time: the extracted copy is used as it is (no archive needed at all).
  fs::remove(dir / "remote" / "cifar-10-binary.tar.gz");
  fs::remove(dir / "cache" / "cifar10" / "cifar-10-binary.tar.gz");
  auto again = load_cifar10(files, source);
  REQUIRE(again.ok());
  CHECK(again->train.labels == split->train.labels);

  // An incomplete extracted copy is named, with the fix.
  fs::remove(dir / "cache" / "cifar10" / "cifar-10-batches-bin" / "data_batch_4.bin");
  auto incomplete = load_cifar10(files, source);
  REQUIRE_FALSE(incomplete.ok());
  check_one_line(incomplete.error().message);
  CHECK_THAT(incomplete.error().message,
             Contains((dir / "cache" / "cifar10" / "cifar-10-batches-bin").string()) &&
                 Contains("lacks data_batch_4.bin") && Contains("delete the directory"));
}

TEST_CASE("cifar10: an archive found in --data-dir is extracted into the cache", "[cifar10]") {
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  write_tar_gz(dir / "data" / "cifar10" / "cifar-10-binary.tar.gz", small_cifar_members());
  Cifar10Files files = small_files(dir / "data" / "cifar10" / "cifar-10-binary.tar.gz");
  files.archive.urls.clear();
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  auto split = load_cifar10(files, source);
  REQUIRE(split.ok());
  CHECK(split->test.count == kSmall);
  CHECK(fs::exists(dir / "cache" / "cifar10" / "cifar-10-batches-bin" / "data_batch_5.bin"));
  CHECK_FALSE(fs::exists(dir / "cache" / "cifar10" / "cifar-10-binary.tar.gz"));
}

TEST_CASE("cifar10: a download with a checksum mismatch leaves nothing behind", "[cifar10]") {
  if (!downloads_or_skip()) return;  // the archive comes from a file:// URL
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  write_tar_gz(dir / "remote" / "cifar-10-binary.tar.gz", small_cifar_members());
  Cifar10Files files = small_files(dir / "remote" / "cifar-10-binary.tar.gz");
  SECTION("md5 (the published checksum)") {
    files.archive.md5 = "c32a1d4ab5d03f1284b67883e8d87530";  // the real archive's
  }
  SECTION("md5 only, as published, no sha256") {
    files.archive.sha256.clear();
    files.archive.md5 = "c32a1d4ab5d03f1284b67883e8d87530";
  }
  SECTION("sha256") {
    files.archive.sha256 = std::string(64, '0');
  }
  DataSource source;
  source.cache_dir = dir / "cache";
  auto split = load_cifar10(files, source);
  REQUIRE_FALSE(split.ok());
  const std::string& msg = split.error().message;
  check_one_line(msg);
  CHECK_THAT(msg, Contains("cifar10/cifar-10-binary.tar.gz") && Contains("expected") &&
                      Contains("NOEIRA_DATA"));
  if (files.archive.sha256.size() == 64 && files.archive.sha256 != std::string(64, '0'))
    CHECK_THAT(msg, Contains("md5") && Contains("c32a1d4ab5d03f1284b67883e8d87530"));
  CHECK_FALSE(fs::exists(dir / "cache" / "cifar10" / "cifar-10-binary.tar.gz"));
  CHECK_FALSE(fs::exists(dir / "cache" / "cifar10" / "cifar-10-batches-bin"));
  CHECK_FALSE(has_leftovers(dir / "cache"));
}

TEST_CASE("cifar10: a corrupt archive that passes its checksum fails extraction cleanly",
          "[cifar10]") {
  if (!downloads_or_skip()) return;  // the archive comes from a file:// URL
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  write_tar_gz(dir / "remote" / "cifar-10-binary.tar.gz", small_cifar_members());
  Bytes bytes = read_bytes(dir / "remote" / "cifar-10-binary.tar.gz");
  bytes.resize(bytes.size() * 2 / 3);
  write_bytes(dir / "remote" / "cifar-10-binary.tar.gz", bytes);
  const Cifar10Files files = small_files(dir / "remote" / "cifar-10-binary.tar.gz");
  DataSource source;
  source.cache_dir = dir / "cache";
  auto split = load_cifar10(files, source);
  REQUIRE_FALSE(split.ok());
  check_one_line(split.error().message);
  CHECK_THAT(split.error().message,
             Contains((dir / "cache" / "cifar10" / "cifar-10-binary.tar.gz").string()) &&
                 Contains("truncated"));
  CHECK_FALSE(fs::exists(dir / "cache" / "cifar10" / "cifar-10-batches-bin"));
  CHECK_FALSE(has_leftovers(dir / "cache"));
}

TEST_CASE("cifar10: batches of the wrong size for full files are named", "[cifar10]") {
  if (!downloads_or_skip()) return;  // the archive comes from a file:// URL
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  write_tar_gz(dir / "remote" / "cifar-10-binary.tar.gz", small_cifar_members());
  Cifar10Files files = small_files(dir / "remote" / "cifar-10-binary.tar.gz");
  files.records_per_file = kCifar10RecordsPerBatch;  // as the official files must hold
  DataSource source;
  source.cache_dir = dir / "cache";
  auto split = load_cifar10(files, source);
  REQUIRE_FALSE(split.ok());
  check_one_line(split.error().message);
  CHECK_THAT(split.error().message,
             Contains((dir / "cache" / "cifar10" / "cifar-10-batches-bin" / "data_batch_1.bin")
                          .string()) &&
                 Contains("holds 8 records") && Contains("must hold 10000"));
}
