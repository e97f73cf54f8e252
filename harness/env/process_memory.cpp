#include "harness/env/process_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

#if defined(NOEIRA_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace noeira {

namespace {

// "VmHWM:   123456 kB" from /proc/self/status, in bytes.
std::optional<int64_t> status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream s(line.substr(prefix.size()));
    int64_t kb = 0;
    if (s >> kb) return kb * 1024;
  }
  return std::nullopt;
}

}  // namespace

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

PeakRss read_peak_rss(bool was_reset) {
  if (was_reset) {
    if (const auto hwm = status_kb("VmHWM"))
      return {hwm, "VmHWM of this process, reset before the run (/proc/self/clear_refs)"};
  }
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0 && u.ru_maxrss > 0)
    return {static_cast<int64_t>(u.ru_maxrss) * 1024,
            "ru_maxrss of this process, not reset (/proc/self/clear_refs refused): its peak so "
            "far, earlier runs included"};
  return {std::nullopt, "unreadable (no /proc/self/status, no getrusage)"};
}

std::optional<int64_t> device_bytes_in_use() {
#if defined(NOEIRA_WITH_CUDA)
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return static_cast<int64_t>(total_b - free_b);
#else
  return std::nullopt;
#endif
}

}  // namespace noeira
