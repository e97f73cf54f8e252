// What the CIFAR-10 tests share: the shared subset's raw records, small archives laid out
// as the official one (tar.gz through tests/support/tar_writer.h), and the checks every
// failure must pass (one line, nothing partial left behind).
#pragma once
#include <archive_entry.h>  // AE_IF* constants only
#include <catch2/catch.hpp>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "datasets/archive.h"
#include "datasets/cifar10.h"
#include "datasets/data_files.h"
#include "tests/support/tar_writer.h"
#include "tests/support/temp_dir.h"

namespace noeira::test::cifar {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

constexpr int64_t kRecord = kCifar10RecordBytes;

// The shared data: $NOEIRA_DATA as ctest sets it, else ../shared/data beside the source.
// Read once at start-up: the download tests clear NOEIRA_DATA (ScopedEnv) and then build
// their archives from these files, which fell back to the source's neighbour and failed
// in a clone elsewhere (/tmp/fresh).
inline const fs::path kSharedDataAtStart = [] {
  if (const char* env = std::getenv("NOEIRA_DATA"); env && *env) return fs::path(env);
  return fs::path(NOEIRA_SOURCE_DIR) / ".." / "shared" / "data";
}();

inline fs::path shared_data() { return kSharedDataAtStart; }

inline DataSource real_data(const TempDir& cache) {
  DataSource source;
  source.allow_download = false;
  source.cache_dir = cache.path();
  source.data_dir = shared_data();
  return source;
}

inline Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const fs::path& p, const Bytes& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// The shared subset's raw bytes; a missing or short copy fails the test by name (the
// tests index into these directly).
inline const Bytes& shared_subset(const char* file, int64_t records) {
  static std::map<std::string, Bytes> cache;
  auto it = cache.find(file);
  if (it == cache.end()) it = cache.emplace(file, read_bytes(shared_data() / "cifar10" / file)).first;
  INFO("shared CIFAR-10 subset " << (shared_data() / "cifar10" / file) << " (set NOEIRA_DATA)");
  REQUIRE(static_cast<int64_t>(it->second.size()) == records * kRecord);
  return it->second;
}
inline const Bytes& raw_train() { return shared_subset("data_batch_1_first4000.bin", 4000); }
inline const Bytes& raw_test() { return shared_subset("test_batch_first1000.bin", 1000); }

// Records [first, first + n) of a raw file.
inline Bytes records(const Bytes& raw, int64_t first, int64_t n) {
  REQUIRE(static_cast<int64_t>(raw.size()) >= (first + n) * kRecord);
  return Bytes(raw.begin() + first * kRecord, raw.begin() + (first + n) * kRecord);
}

struct Member {
  std::string path;
  Bytes bytes;
  unsigned type = AE_IFREG;
  std::string link_target = {};
};

// A tar.gz of the members (ustar; see tests/support/tar_writer.h).
inline void write_tar_gz(const fs::path& out, const std::vector<Member>& members) {
  std::vector<noeira::test::TarMember> tar;
  for (const Member& m : members)
    tar.push_back({m.path, m.bytes,
                   m.type == AE_IFDIR ? '5' : m.type == AE_IFLNK ? '2' : '0', m.link_target});
  noeira::test::write_tar_gz(out, tar);
}

// A small archive laid out as the official one: five train batches of `n` records each
// (consecutive records of the subset) and a test batch of `n`, plus the two files the
// loader does not need.
constexpr int64_t kSmall = 8;
inline std::vector<Member> small_cifar_members() {
  std::vector<Member> m;
  m.push_back({"cifar-10-batches-bin/", {}, AE_IFDIR});
  m.push_back({"cifar-10-batches-bin/batches.meta.txt", {'a', 'i', 'r', '\n'}});
  for (int k = 1; k <= 5; ++k)
    m.push_back({"cifar-10-batches-bin/data_batch_" + std::to_string(k) + ".bin",
                 records(raw_train(), (k - 1) * kSmall, kSmall)});
  m.push_back({"cifar-10-batches-bin/test_batch.bin", records(raw_test(), 0, kSmall)});
  m.push_back({"cifar-10-batches-bin/readme.html", {'<', 'p', '>'}});
  return m;
}

// The cap the small archives' members stay under (one small batch file).
constexpr int64_t kSmallCap = kSmall * kRecord;

inline std::vector<std::string> wanted_members() {
  std::vector<std::string> names;
  for (int k = 1; k <= 5; ++k)
    names.push_back("cifar-10-batches-bin/data_batch_" + std::to_string(k) + ".bin");
  names.push_back("cifar-10-batches-bin/test_batch.bin");
  return names;
}

// Anything a failed or finished download or extraction must not leave: .part or .tmp.
inline bool has_leftovers(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return false;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".part.") != std::string::npos || name.find(".tmp.") != std::string::npos)
      return true;
  }
  return false;
}

inline void check_one_line(const std::string& msg) {
  INFO(msg);
  CHECK(msg.find('\n') == std::string::npos);
}

inline std::string read_error(const std::vector<fs::path>& files, int64_t per_file) {
  auto result = read_cifar10_files(files, per_file, "cifar10");
  REQUIRE_FALSE(result.ok());
  check_one_line(result.error().message);
  return result.error().message;
}

inline std::string extract_error(const fs::path& archive, const fs::path& dest,
                          const std::vector<std::string>& members = wanted_members()) {
  Status s = extract_members(archive, members, dest, kSmallCap);
  REQUIRE_FALSE(s.ok());
  check_one_line(s.error().message);
  CHECK_FALSE(fs::exists(dest));
  CHECK_FALSE(has_leftovers(dest.parent_path()));
  return s.error().message;
}

// A classification recipe file with the given dataset block and input shape.
inline fs::path write_recipe(const TempDir& dir, const std::string& name, const std::string& dataset,
                      const std::string& input_shape, int hidden = 16) {
  const fs::path p = dir / (name + ".json");
  std::ofstream(p) << R"({"name": ")" << name << R"(", "task": "classification",
    "dataset": )" << dataset << R"(, "input_shape": )" << input_shape << R"(,
    "num_classes": 10,
    "layers": [{"type": "linear", "out": )" << hidden << R"(, "act": "relu"},
               {"type": "linear", "out": 10}],
    "batch": 100, "epochs": 1,
    "optimizer": {"type": "adam", "lr": 0.001}})";
  return p;
}

constexpr std::array<float, 3> kMean = {0.4914f, 0.4822f, 0.4465f};
constexpr std::array<float, 3> kStd = {0.2470f, 0.2435f, 0.2616f};
inline const std::string kCifarDatasetJson =
    R"({"name": "cifar10-subset", "normalize": {"mean": [0.4914, 0.4822, 0.4465],
        "std": [0.2470, 0.2435, 0.2616]}})";


}  // namespace noeira::test::cifar
