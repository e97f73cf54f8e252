// The GPU's SM and memory clocks and its clock-event (throttle) reasons, read through NVML
// before and after each variant (as nvbench does), so a result measured while the GPU was
// throttled, or at another clock than the one it started at, says so. NVML is the driver's
// libnvidia-ml.so.1, loaded at run time: no build dependency, and a machine without a driver
// records why there is no reading.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace noeira {

struct ClockReading {
  bool available = false;
  std::string why;  // when not available
  unsigned sm_mhz = 0, mem_mhz = 0;
  uint64_t reasons = 0;             // NVML's clock-event reason bits
  std::vector<std::string> active;  // their names ("sw_thermal_slowdown", ...), idle excluded
};

// The CUDA device in use (matched by PCI bus id where the build has CUDA; else NVML's 0).
ClockReading read_gpu_clocks();
// A warning for a variant measured between two readings: throttled (power, thermal or a
// hardware slowdown, at either end), or the SM clock changed by more than 5 %; "" when
// neither, or when there is no reading.
std::string clock_warning(const ClockReading& before, const ClockReading& after);
// The readings around a variant and the warning they call for (a results variant's
// "clocks").
struct VariantClocks {
  ClockReading before, after;
  std::string warning;  // "" when none
};
// Reads the clocks again after `variant`, which started at `before`; prints the warning,
// if any, on stderr.
VariantClocks clocks_since(const ClockReading& before, const std::string& variant);

}  // namespace noeira
