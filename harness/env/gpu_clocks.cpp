#include "harness/env/gpu_clocks.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdio>

#if defined(NOEIRA_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace noeira {

namespace {

// The few NVML declarations used (the ABI of nvml.h, which not every toolkit ships):
// nvmlReturn_t is an int (0 = success), nvmlDevice_t an opaque pointer, NVML_CLOCK_SM = 1
// and NVML_CLOCK_MEM = 2 of nvmlClockType_t.
using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using ByBusIdFn = int (*)(const char*, NvmlDevice*);
using ByIndexFn = int (*)(unsigned, NvmlDevice*);
using ClockFn = int (*)(NvmlDevice, int, unsigned*);
using ReasonsFn = int (*)(NvmlDevice, unsigned long long*);
constexpr int kClockSm = 1, kClockMem = 2;

// nvml.h's nvmlClocksEventReason* bits; idle, application-clock and display settings are
// not throttling.
struct ReasonBit {
  uint64_t bit;
  const char* name;
  bool throttles;
};
constexpr ReasonBit kReasons[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", true},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};

bool throttled(const ClockReading& r) {
  for (const ReasonBit& b : kReasons)
    if (b.throttles && (r.reasons & b.bit)) return true;
  return false;
}

}  // namespace

ClockReading read_gpu_clocks() {
  ClockReading r;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    r.why = "no NVML (libnvidia-ml.so.1 comes with the NVIDIA driver)";
    return r;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
  // Used only where the CUDA runtime can name the device's bus.
  [[maybe_unused]] auto by_bus =
      reinterpret_cast<ByBusIdFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto by_index = reinterpret_cast<ByIndexFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto clock = reinterpret_cast<ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  auto reasons = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!reasons)  // drivers before 535 name it after throttling
    reasons = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  if (!init || !shutdown || !by_index || !clock || !reasons) {
    r.why = "this NVML lacks a function used here";
    dlclose(lib);
    return r;
  }
  if (init() != 0) {
    r.why = "nvmlInit failed";
    dlclose(lib);
    return r;
  }
  NvmlDevice dev = nullptr;
  int found = -1;
#if defined(NOEIRA_WITH_CUDA)
  int cuda_dev = 0;
  char bus[32] = {};
  if (by_bus && cudaGetDevice(&cuda_dev) == cudaSuccess &&
      cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_dev) == cudaSuccess)
    found = by_bus(bus, &dev);
#endif
  if (found != 0) found = by_index(0, &dev);
  unsigned long long bits = 0;
  if (found != 0) {
    r.why = "NVML sees no device";
  } else if (clock(dev, kClockSm, &r.sm_mhz) != 0 || clock(dev, kClockMem, &r.mem_mhz) != 0 ||
             reasons(dev, &bits) != 0) {
    r.why = "NVML could not read the clocks";
  } else {
    r.available = true;
    r.reasons = bits;
    for (const ReasonBit& b : kReasons)
      if ((bits & b.bit) && b.bit != 0x1) r.active.push_back(b.name);
  }
  shutdown();
  dlclose(lib);
  return r;
}

std::string clock_warning(const ClockReading& before, const ClockReading& after) {
  if (!before.available || !after.available) return "";
  std::string w;
  if (throttled(before) || throttled(after)) {
    w = "ran throttled (";
    const std::vector<std::string>& a = throttled(after) ? after.active : before.active;
    for (size_t i = 0; i < a.size(); ++i) w += (i ? ", " : "") + a[i];
    w += ")";
  }
  if (before.sm_mhz > 0 &&
      std::abs(static_cast<double>(after.sm_mhz) - before.sm_mhz) / before.sm_mhz > 0.05) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "SM clock changed %u -> %u MHz", before.sm_mhz, after.sm_mhz);
    w += (w.empty() ? "" : "; ") + std::string(buf);
  }
  return w;
}

VariantClocks clocks_since(const ClockReading& before, const std::string& variant) {
  VariantClocks c{before, read_gpu_clocks(), ""};
  c.warning = clock_warning(c.before, c.after);
  if (!c.warning.empty()) std::fprintf(stderr, "  %s: WARNING %s\n", variant.c_str(), c.warning.c_str());
  return c;
}

}  // namespace noeira
