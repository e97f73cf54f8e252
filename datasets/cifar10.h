// CIFAR-10, binary version ("suitable for C programs"): files of 3073-byte records, one
// label byte (0-9: airplane automobile bird cat deer dog frog horse ship truck) then the
// 32x32 image as 1024 red, 1024 green, 1024 blue bytes (CHW, rows top to bottom).
//   cifar10         the official cifar-10-binary.tar.gz (data_batch_1..5.bin, 50,000 train;
//                   test_batch.bin, 10,000 test), downloaded on first use, md5- and
//                   sha256-checked, extracted with libarchive into the cache.
//   cifar10-subset  the first 4,000 records of data_batch_1.bin and the first 1,000 of
//                   test_batch.bin (shared/data/cifar10), for tests and CPU benchmarks.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/data_files.h"
#include "datasets/image_dataset.h"
#include "nn/error.h"

namespace noeira {

inline constexpr int kCifar10Classes = 10;
inline constexpr int64_t kCifar10ImageBytes = 3 * 32 * 32;
inline constexpr int64_t kCifar10RecordBytes = 1 + kCifar10ImageBytes;  // 3073
inline constexpr int64_t kCifar10RecordsPerBatch = 10000;              // each official file

enum class Cifar10Variant { kFull, kSubset };

// "cifar10" or "cifar10-subset".
std::string_view cifar10_variant_name(Cifar10Variant variant);
Result<Cifar10Variant> parse_cifar10_variant(std::string_view name);

// Reads CIFAR-10 binary files into one data set holding their records in order, sample
// shape (3, 32, 32). `records_per_file`: how many records each file must hold (10,000 for
// an official batch), or 0 for any positive whole number. Every failure is one line naming
// the file and the fix: missing, empty, a size that is not a whole number of 3073-byte
// records (truncated, or not CIFAR-10), the wrong record count, a label above 9.
Result<ImageDataset> read_cifar10_files(const std::vector<std::filesystem::path>& files,
                                        int64_t records_per_file, std::string name);

// The official archive and what the data set needs from it.
struct Cifar10Files {
  DataFile archive;         // "cifar10/cifar-10-binary.tar.gz": md5 as published, its URL
  std::string archive_dir;  // the directory inside it: "cifar-10-batches-bin"
  std::vector<std::string> train_members;  // "data_batch_1.bin" .. "data_batch_5.bin"
  std::string test_member;                 // "test_batch.bin"
  int64_t records_per_file = kCifar10RecordsPerBatch;
};
Cifar10Files cifar10_files();

// The directory holding the six extracted batch files. The first data directory
// (data_files.h: data_dirs) with cifar10/<archive_dir>/ is used as it is; otherwise the
// archive is located (or downloaded into the cache, verified) and its six members are
// extracted into <cache>/cifar10/<archive_dir>, atomically (a temporary directory renamed
// into place).
Result<std::filesystem::path> locate_cifar10_batches(const Cifar10Files& files,
                                                     const DataSource& source);

// The shared subset: two files, never downloaded, pinned by sha256.
struct Cifar10SubsetFiles {
  DataFile train, test;  // cifar10/data_batch_1_first4000.bin, cifar10/test_batch_first1000.bin
  int64_t train_records = 4000, test_records = 1000;
};
Cifar10SubsetFiles cifar10_subset_files();

// cifar10: 50,000 train / 10,000 test; cifar10-subset: 4,000 / 1,000. uint8 CHW pixels.
Result<ImageSplit> load_cifar10(Cifar10Variant variant, const DataSource& source);
// The full data set from `files` (tests pass a small archive and its file:// URL).
Result<ImageSplit> load_cifar10(const Cifar10Files& files, const DataSource& source);

}  // namespace noeira
