#include "datasets/cifar10.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>

#include "datasets/archive.h"
#include "datasets/quoted_path.h"

namespace noeira {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFix =
    "delete it (or the directory it was extracted into) to fetch it again, or point "
    "--data-dir at a good copy";

// As published on https://www.cs.toronto.edu/~kriz/cifar.html (the md5 torchvision
// checks); the sha256 is of the same 170,052,171 bytes.
constexpr const char* kArchiveMd5 = "c32a1d4ab5d03f1284b67883e8d87530";
constexpr const char* kArchiveSha256 =
    "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd";
constexpr const char* kArchiveUrl = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz";

// The shared subset (shared/data/PROVENANCE.txt), pinned as found there.
constexpr const char* kSubsetTrainSha256 =
    "0993cf8b8e43bc207603aef9787006995746513f5e3fa5a52e06d1b069926330";
constexpr const char* kSubsetTestSha256 =
    "8314c96d7cd65618193bab23acdd5d4c4af15bf6dd00a1781d55beedf3be1ef5";

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// A file's record count, or the reason it is not a whole number of records.
Result<int64_t> record_count(const fs::path& path, int64_t records_per_file) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error("CIFAR-10 file " + quoted(path) +
                      " does not exist; check the path, or point --data-dir or NOEIRA_DATA at "
                      "a directory holding it");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return make_error("cannot read " + quoted(path) + ": " + ec.message());
  if (size == 0)
    return make_error(quoted(path) + " is empty (an interrupted download or extraction?); " +
                      kFix);
  if (size % kCifar10RecordBytes != 0)
    return make_error(quoted(path) + " is " + std::to_string(size) +
                      " bytes, not a whole number of 3073-byte CIFAR-10 records (1 label + "
                      "3072 pixels): truncated, or not a CIFAR-10 binary file; " + kFix);
  const auto records = static_cast<int64_t>(size / kCifar10RecordBytes);
  if (records_per_file > 0 && records != records_per_file)
    return make_error(quoted(path) + " holds " + std::to_string(records) +
                      " records but this CIFAR-10 file must hold " +
                      std::to_string(records_per_file) + " (" +
                      std::to_string(records_per_file * kCifar10RecordBytes) +
                      " bytes): truncated, or a different file; " + kFix);
  return records;
}

// Appends the file's records to ds (already sized for them, from record `first` on).
Status read_records(const fs::path& path, int64_t records, int64_t first, ImageDataset& ds) {
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(path.c_str(), "rb"));
  if (!in) return make_error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  constexpr int64_t kChunk = 1000;  // records per read: 3 MB
  std::vector<uint8_t> buf(static_cast<size_t>(kChunk * kCifar10RecordBytes));
  for (int64_t done = 0; done < records;) {
    const int64_t n = std::min(kChunk, records - done);
    const auto bytes = static_cast<size_t>(n * kCifar10RecordBytes);
    if (std::fread(buf.data(), 1, bytes, in.get()) != bytes)
      return make_error(std::ferror(in.get())
                            ? "cannot read " + quoted(path) + ": " + std::strerror(errno)
                            : quoted(path) + " became shorter while being read; read it again");
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* rec = buf.data() + r * kCifar10RecordBytes;
      const int64_t sample = first + done + r;
      if (rec[0] >= kCifar10Classes)
        return make_error(quoted(path) + " has label " + std::to_string(rec[0]) +
                          " in record " + std::to_string(done + r) +
                          " but CIFAR-10 labels are 0-9: corrupt, or not a CIFAR-10 binary "
                          "file (CIFAR-100's records differ); " + kFix);
      ds.labels[static_cast<size_t>(sample)] = rec[0];
      std::memcpy(ds.pixels.data() + sample * kCifar10ImageBytes, rec + 1,
                  static_cast<size_t>(kCifar10ImageBytes));
    }
    done += n;
  }
  return {};
}

std::string member_path(const Cifar10Files& files, const std::string& name) {
  return files.archive_dir + "/" + name;
}

std::vector<std::string> all_members(const Cifar10Files& files) {
  std::vector<std::string> names = files.train_members;
  names.push_back(files.test_member);
  return names;
}

}  // namespace

std::string_view cifar10_variant_name(Cifar10Variant variant) {
  return variant == Cifar10Variant::kSubset ? "cifar10-subset" : "cifar10";
}

Result<Cifar10Variant> parse_cifar10_variant(std::string_view name) {
  if (name == "cifar10") return Cifar10Variant::kFull;
  if (name == "cifar10-subset") return Cifar10Variant::kSubset;
  return make_error("unknown CIFAR-10 variant '" + std::string(name) +
                    "'; use cifar10 or cifar10-subset");
}

Result<ImageDataset> read_cifar10_files(const std::vector<fs::path>& files,
                                        int64_t records_per_file, std::string name) {
  // Every file's size first, so a bad one fails before any slow read.
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (const auto& path : files) {
    Result<int64_t> n = record_count(path, records_per_file);
    if (!n) return n.error();
    counts.push_back(*n);
    total += *n;
  }
  ImageDataset ds;
  ds.name = std::move(name);
  ds.count = total;
  ds.sample_shape = {3, 32, 32};
  ds.num_classes = kCifar10Classes;
  ds.pixels.resize(static_cast<size_t>(total * kCifar10ImageBytes));
  ds.labels.resize(static_cast<size_t>(total));
  int64_t first = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    NOEIRA_TRY(read_records(files[i], counts[i], first, ds));
    first += counts[i];
  }
  return ds;
}

Cifar10Files cifar10_files() {
  Cifar10Files f;
  f.archive = DataFile{"cifar10/cifar-10-binary.tar.gz", kArchiveSha256, {kArchiveUrl}, {},
                       kArchiveMd5};
  f.archive_dir = "cifar-10-batches-bin";
  for (int i = 1; i <= 5; ++i) f.train_members.push_back("data_batch_" + std::to_string(i) + ".bin");
  f.test_member = "test_batch.bin";
  return f;
}

Result<fs::path> locate_cifar10_batches(const Cifar10Files& files, const DataSource& source) {
  const fs::path sub = fs::path("cifar10") / files.archive_dir;
  auto find_extracted = [&]() -> Result<std::optional<fs::path>> {
    for (const auto& dir : data_dirs(source)) {
      const fs::path batches = dir / sub;
      std::error_code ec;
      if (!fs::is_directory(batches, ec)) continue;
      for (const auto& name : all_members(files))
        if (!fs::is_regular_file(batches / name, ec))
          return make_error(quoted(batches) + " lacks " + name +
                            " (an incomplete copy); delete the directory to extract it again "
                            "from " + fs::path(files.archive.relative_path).filename().string() +
                            ", or point --data-dir at a complete copy");
      return std::optional<fs::path>(batches);
    }
    return std::optional<fs::path>();
  };
  {
    auto found = find_extracted();
    if (!found) return found.error();
    if (*found) return **found;
  }
  Result<fs::path> archive = locate(files.archive, source);
  if (!archive)
    return make_error(archive.error().message + " (or one holding the extracted cifar10/" +
                      files.archive_dir + "/)");
  // One extraction at a time per process; a second caller then finds the first's result.
  static std::mutex extract_mutex;
  std::lock_guard<std::mutex> lock(extract_mutex);
  {
    auto found = find_extracted();
    if (!found) return found.error();
    if (*found) return **found;
  }
  std::vector<std::string> members;
  for (const auto& name : all_members(files)) members.push_back(member_path(files, name));
  const fs::path dest = resolved_cache_dir(source) / sub;
  // No member may be larger than a full batch file: a hostile archive cannot fill the disk.
  const int64_t records = files.records_per_file > 0 ? files.records_per_file
                                                      : kCifar10RecordsPerBatch;
  NOEIRA_TRY(extract_members(*archive, members, dest, records * kCifar10RecordBytes));
  return dest;
}

Cifar10SubsetFiles cifar10_subset_files() {
  return {DataFile{"cifar10/data_batch_1_first4000.bin", kSubsetTrainSha256, {}},
          DataFile{"cifar10/test_batch_first1000.bin", kSubsetTestSha256, {}}};
}

Result<ImageSplit> load_cifar10(const Cifar10Files& files, const DataSource& source) {
  Result<fs::path> dir = locate_cifar10_batches(files, source);
  if (!dir) return dir.error();
  std::vector<fs::path> train_paths;
  for (const auto& name : files.train_members) train_paths.push_back(*dir / name);
  const std::string name(cifar10_variant_name(Cifar10Variant::kFull));
  auto train = read_cifar10_files(train_paths, files.records_per_file, name);
  if (!train) return train.error();
  auto test = read_cifar10_files({*dir / files.test_member}, files.records_per_file, name);
  if (!test) return test.error();
  return ImageSplit{std::move(train).value(), std::move(test).value()};
}

Result<ImageSplit> load_cifar10(Cifar10Variant variant, const DataSource& source) {
  if (variant == Cifar10Variant::kFull) return load_cifar10(cifar10_files(), source);
  const Cifar10SubsetFiles files = cifar10_subset_files();
  // Published nowhere, so never downloaded: looked up in the data directories, checked
  // for whole records first (the more telling message), then by sha256.
  auto find = [&](const DataFile& file, int64_t records) -> Result<fs::path> {
    std::vector<fs::path> looked;
    for (const auto& dir : data_dirs(source)) {
      const fs::path path = dir / file.relative_path;
      std::error_code ec;
      if (!fs::is_regular_file(path, ec)) {
        looked.push_back(path);
        continue;
      }
      Result<int64_t> n = record_count(path, records);
      if (!n) return n.error();
      Result<std::string> sha = sha256_file(path);
      if (!sha) return sha.error();
      if (*sha != file.sha256)
        return make_error(quoted(path) + " is corrupt or a different version: sha256 " + *sha +
                          ", expected " + file.sha256 +
                          "; replace it with the copy in shared/data/cifar10, or point "
                          "--data-dir at that directory's parent");
      return path;
    }
    std::string where;
    for (const auto& p : looked) {
      if (!where.empty()) where += ", ";
      where += p.string();
    }
    return make_error(file.relative_path + " not found (looked in " + where +
                      "); cifar10-subset is never downloaded: point --data-dir or NOEIRA_DATA "
                      "at shared/data beside the project, or use --dataset cifar10");
  };
  Result<fs::path> train_path = find(files.train, files.train_records);
  if (!train_path) return train_path.error();
  Result<fs::path> test_path = find(files.test, files.test_records);
  if (!test_path) return test_path.error();
  const std::string name(cifar10_variant_name(variant));
  auto train = read_cifar10_files({*train_path}, files.train_records, name);
  if (!train) return train.error();
  auto test = read_cifar10_files({*test_path}, files.test_records, name);
  if (!test) return test.error();
  return ImageSplit{std::move(train).value(), std::move(test).value()};
}

}  // namespace noeira
