// Tar archives through libarchive (datasets/archive.h), as the CIFAR-10 download is read:
// list_archive, extract_members of the six CIFAR-10 batch files, then read_cifar10_files
// over what was extracted. Contract: a listing, an extraction of exactly the named members
// into the destination and nowhere else, and a data set, or an Error at the first step
// that fails; never a crash, a hang or undefined behaviour.
//
// Input: the archive file (tar, or tar compressed with gzip, bzip2 or xz).
// Cap: inputs up to 32 KiB; no allocation above 128 MiB (our buffers are 1 MiB; the rest
// is libarchive's), RSS below 1.5 GiB. Extracted files are written to /dev/shm; each is cut
// by extract_members at one batch file's size (30,730,000 bytes), and RLIMIT_FSIZE (64 MiB)
// stays as a second fence should that cap ever break.
// libFuzzer flags: -max_len=32768 -malloc_limit_mb=128 -rss_limit_mb=1536 -timeout=20
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>

#include "datasets/archive.h"
#include "datasets/cifar10.h"
#include "fuzz/fuzz_support.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A file over the limit: write() fails with EFBIG instead of the process being killed.
  signal(SIGXFSZ, SIG_IGN);
  const rlimit limit{64 << 20, 64 << 20};
  setrlimit(RLIMIT_FSIZE, &limit);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const noeira::fuzz::ScratchDir scratch;
  const noeira::fuzz::MemFile archive(noeira::fuzz::Bytes(data, size));
  auto entries = noeira::list_archive(archive.path());
  if (!entries) {
    FUZZ_EXPECT(!entries.error().message.empty());
    return 0;
  }
  for (const auto& e : *entries) FUZZ_EXPECT(e.size >= 0);

  const noeira::Cifar10Files files = noeira::cifar10_files();
  std::vector<std::string> members;
  for (const auto& name : files.train_members) members.push_back(files.archive_dir + "/" + name);
  members.push_back(files.archive_dir + "/" + files.test_member);
  const fs::path dest = scratch.path() / "batches";
  std::error_code ec;
  fs::remove_all(dest, ec);
  // The cap the real caller (locate_cifar10_batches) passes: one official batch file.
  const noeira::Status extracted = noeira::extract_members(
      archive.path(), members, dest, files.records_per_file * noeira::kCifar10RecordBytes);
  // Whatever happened, nothing but dest (on success) is left in the scratch directory.
  for (const auto& left : fs::directory_iterator(scratch.path(), ec))
    FUZZ_EXPECT(extracted && left.path() == dest);
  if (!extracted) {
    FUZZ_EXPECT(!extracted.error().message.empty());
    return 0;
  }
  size_t written = 0;
  for (const auto& f : fs::directory_iterator(dest, ec)) {
    const std::string name = f.path().filename().string();
    FUZZ_EXPECT(f.is_regular_file() &&
                std::any_of(members.begin(), members.end(),
                            [&](const std::string& m) { return fs::path(m).filename() == name; }));
    ++written;
  }
  FUZZ_EXPECT(written == members.size());

  std::vector<fs::path> train;
  for (const auto& name : files.train_members) train.push_back(dest / name);
  auto ds = noeira::read_cifar10_files(train, 0, "fuzz");
  if (ds) FUZZ_EXPECT(ds->labels.size() == static_cast<size_t>(ds->count));
  auto test = noeira::read_cifar10_files({dest / files.test_member}, 0, "fuzz");
  if (test) FUZZ_EXPECT(test->labels.size() == static_cast<size_t>(test->count));
  fs::remove_all(dest, ec);
  return 0;
}
