// The CPU's L2 and L3 sizes, for `micro`'s cache-aware bandwidth (harness/micro/
// micro_roofline.h): which working sets the streaming kernel is measured at.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace noeira {

struct CpuCaches {
  int64_t l2_bytes = 0;  // per core
  int64_t l3_bytes = 0;  // one L3 instance (shared by its cores)
  // Where they come from: "sysfs", "sysconf" or "assumed" (unknown: 1 MiB / 32 MiB), or
  // "L2 <one>, L3 <other>" when the levels differ.
  std::string source;
};

// cpu0's caches from /sys/devices/system/cpu/cpu0/cache/index*/ first, then
// sysconf(_SC_LEVEL2/3_CACHE_SIZE), then the defaults, each level on its own. sysfs
// comes first: glibc's sysconf read 384 MiB of L3 on a KVM guest whose sysfs (and
// lscpu) say 32 MiB.
CpuCaches cpu_caches();

// A sysfs cache size ("1024K", "32M", "512"): bytes, or 0 when unreadable.
int64_t parse_cache_size(std::string_view text);

}  // namespace noeira
