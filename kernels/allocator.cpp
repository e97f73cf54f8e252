#include "kernels/allocator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

namespace noeira {

namespace {

// Arenas of 2 MiB or more sit on transparent huge pages (THP "madvise" mode, Debian's
// default, gives none unless asked): the step's GEMMs and loops walk tens of MiB, and with
// 4 KiB pages their TLB misses cost gpt-tiny's 1-thread step about 2% (47.1-47.6 ms against
// 47.6-51.8, five runs each, docs/cpu-runs/2026-12-05-zen4-slabs.md). Advice only: where
// THP is off the pages stay small.
constexpr size_t kHugePage = size_t{2} << 20;

// A number from a file holding one (a cgroup's memory.max: "max" = none).
std::optional<size_t> read_number(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return std::nullopt;
  unsigned long long v = 0;
  const bool ok = std::fscanf(f, "%llu", &v) == 1;
  std::fclose(f);
  if (!ok) return std::nullopt;
  return static_cast<size_t>(v);
}

}  // namespace

Result<void*> HostAllocator::allocate(size_t bytes, const char* what) {
  const bool huge = bytes >= kHugePage;
  const size_t align = huge ? kHugePage : 64;
  if (bytes > SIZE_MAX - align)  // the rounding below would wrap
    return make_error("cannot allocate " + std::to_string(bytes) + " bytes for " + what +
                      ": beyond the address space");
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);
  if (!p)
    return make_error("out of host memory allocating " + std::to_string(bytes) + " bytes for " +
                      what + "; reduce the batch size or the data set");
  std::memset(p, 0, rounded);
  return p;
}

void HostAllocator::release(void* p) { std::free(p); }

std::optional<size_t> HostAllocator::available_bytes(std::string* where) const {
  std::optional<size_t> avail;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char key[64];
    unsigned long long kib = 0;
    while (std::fscanf(f, "%63s %llu kB\n", key, &kib) == 2)
      if (std::strcmp(key, "MemAvailable:") == 0) {
        avail = static_cast<size_t>(kib) * 1024;
        if (where) *where = "MemAvailable";
        break;
      }
    std::fclose(f);
  }
  // This process's cgroup (v2, the root view inside a container): its limit less its use.
  const std::optional<size_t> max = read_number("/sys/fs/cgroup/memory.max");
  const std::optional<size_t> used = read_number("/sys/fs/cgroup/memory.current");
  if (max && used && *max > *used && (!avail || *max - *used < *avail)) {
    avail = *max - *used;
    if (where) *where = "the cgroup's memory.max";
  }
  return avail;
}

}  // namespace noeira
