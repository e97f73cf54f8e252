// Peak memory of one run inside a process that makes several: the resident-set high-water
// mark (VmHWM) is reset before the run by writing "5" to /proc/self/clear_refs (Linux >= 4.0,
// allowed on one's own process) and read after it, so each run's peak is its own. Where the
// reset is refused, the process's peak so far (getrusage ru_maxrss) is all there is, and the
// method says so. On the GPU, the device bytes in use (cudaMemGetInfo) before and after.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace noeira {

// Resets the high-water mark; false when the kernel refused (then the peak that follows
// is the process's, earlier runs included).
bool reset_peak_rss();

struct PeakRss {
  std::optional<int64_t> bytes;
  std::string method;  // how it was taken, for the results' rss_method
};
// The resident-set peak since the last successful reset_peak_rss() (`was_reset`), else
// the process's peak so far.
PeakRss read_peak_rss(bool was_reset);

// Device bytes in use (total - free, every process on the device) on the current CUDA
// device; nullopt in a build without CUDA or when CUDA cannot say.
std::optional<int64_t> device_bytes_in_use();

}  // namespace noeira
