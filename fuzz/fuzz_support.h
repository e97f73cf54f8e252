// What the fuzz targets share: an input as a file (for parsers that read a path), an
// input cut into parts (for targets that need several), and the check that turns a broken
// contract into a crash libFuzzer reports.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace noeira::fuzz {

using Bytes = std::span<const uint8_t>;

// A parser accepted what it should refuse, or returned an object that breaks its own
// invariants: abort, so that libFuzzer keeps the input as a finding.
[[noreturn]] inline void contract_broken(const char* what, const char* file, int line) {
  std::fprintf(stderr, "contract broken: %s (%s:%d)\n", what, file, line);
  std::abort();
}
#define FUZZ_EXPECT(cond) \
  ((cond) ? void() : ::noeira::fuzz::contract_broken(#cond, __FILE__, __LINE__))

// The bytes as an anonymous in-memory file (memfd) named /proc/self/fd/<n>: the parser
// opens it by path like any file, nothing touches the disk, and it is gone once closed.
class MemFile {
 public:
  explicit MemFile(Bytes bytes) : fd_(memfd_create("noeira-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) fail("memfd_create");
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) fail("write to the memfd");
      done += static_cast<size_t>(n);
    }
  }
  explicit MemFile(std::string_view text)
      : MemFile(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size())) {}
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  std::filesystem::path path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);  // the fuzzing machine, not the input: stop the run
    std::exit(2);
  }
  int fd_;
};

// An input holding several inputs: every part but the last is a 4-byte little-endian
// length, then that many bytes (cut short where the input ends); the last part is the
// rest. Parts past the end are empty. fuzz/make-seeds writes seeds in this layout.
inline std::vector<Bytes> split_parts(Bytes in, size_t parts) {
  std::vector<Bytes> out;
  for (size_t i = 0; i + 1 < parts; ++i) {
    uint32_t len = 0;
    const size_t head = std::min<size_t>(4, in.size());
    if (head > 0) std::memcpy(&len, in.data(), head);  // little-endian hosts, as the formats
    in = in.subspan(head);
    const size_t take = std::min<size_t>(len, in.size());
    out.push_back(in.first(take));
    in = in.subspan(take);
  }
  out.push_back(in);
  return out;
}

inline std::string_view text_of(Bytes b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A fresh directory for a target's files (extracted archives), under /dev/shm when there
// is one: removed with its contents on exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec)
                                     ? std::filesystem::path("/dev/shm")
                                     : std::filesystem::temp_directory_path();
    path_ = base / ("noeira-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_, ec);
    if (ec) {
      std::fprintf(stderr, "cannot create %s: %s\n", path_.c_str(), ec.message().c_str());
      std::exit(2);
    }
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace noeira::fuzz
