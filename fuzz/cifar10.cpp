// CIFAR-10 binary files (3073-byte records: a label byte, then 3072 pixels): the input as
// one file, read by read_cifar10_files. Contract: a data set holding every record, labels
// 0-9, or an Error (empty, not whole records, the wrong record count, a label above 9);
// never a crash or undefined behaviour.
//
// Input: a byte choosing the record count the file must hold (0 = any, else 1-3), then the
// file. Cap: memory follows the file's size (pixels and labels of its records): no
// allocation above 64 MiB, RSS below 1 GiB for inputs up to 64 KiB.
// libFuzzer flags: -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10
#include "datasets/cifar10.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t records_per_file = data[0] % 4;
  const noeira::fuzz::MemFile file(noeira::fuzz::Bytes(data + 1, size - 1));
  auto ds = noeira::read_cifar10_files({file.path()}, records_per_file, "fuzz");
  if (!ds) {
    FUZZ_EXPECT(!ds.error().message.empty());
    return 0;
  }
  const auto records = static_cast<int64_t>((size - 1) / noeira::kCifar10RecordBytes);
  FUZZ_EXPECT((size - 1) % noeira::kCifar10RecordBytes == 0 && records > 0);
  FUZZ_EXPECT(records_per_file == 0 || records == records_per_file);
  FUZZ_EXPECT(ds->count == records && ds->labels.size() == static_cast<size_t>(records));
  FUZZ_EXPECT(ds->pixels.size() == static_cast<size_t>(records * noeira::kCifar10ImageBytes));
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* rec = data + 1 + r * noeira::kCifar10RecordBytes;
    FUZZ_EXPECT(ds->labels[static_cast<size_t>(r)] == rec[0] && rec[0] < noeira::kCifar10Classes);
    FUZZ_EXPECT(std::memcmp(ds->pixels.data() + r * noeira::kCifar10ImageBytes, rec + 1,
                            static_cast<size_t>(noeira::kCifar10ImageBytes)) == 0);
  }
  return 0;
}
