#include "harness/env/energy_meter.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#if defined(NOEIRA_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace noeira {

namespace fs = std::filesystem;

namespace {

using NvmlDevice = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using ByBusIdFn = int (*)(const char*, NvmlDevice*);
using ByIndexFn = int (*)(unsigned, NvmlDevice*);
using EnergyFn = int (*)(NvmlDevice, unsigned long long*);

std::optional<uint64_t> read_u64(const fs::path& p, std::string* why) {
  std::ifstream in(p);
  uint64_t v = 0;
  if (!in) {
    if (why) *why = p.string() + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (!(in >> v)) {
    if (why) *why = p.string() + ": not a number";
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<NvmlEnergyApi> load_nvml_energy_api(std::string* why) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    if (why) *why = "no NVML (libnvidia-ml.so.1 comes with the NVIDIA driver)";
    return std::nullopt;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
  auto by_bus = reinterpret_cast<ByBusIdFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto by_index = reinterpret_cast<ByIndexFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto energy = reinterpret_cast<EnergyFn>(dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
  if (!init || !shutdown || !by_index || !energy) {
    if (why) *why = "this NVML lacks nvmlDeviceGetTotalEnergyConsumption (a driver before R390)";
    dlclose(lib);
    return std::nullopt;
  }
  NvmlEnergyApi api;
  api.init = init;
  api.shutdown = shutdown;
  if (by_bus) api.handle_by_bus_id = by_bus;
  api.handle_by_index = by_index;
  api.total_energy = energy;
  return api;  // the library stays loaded: the table points into it
}

EnergyMeter EnergyMeter::nvml(const std::optional<NvmlEnergyApi>& api, const std::string& why_not_loaded) {
  EnergyMeter m;
  m.source_ = "nvml";
  if (!api) {
    m.why_ = why_not_loaded;
    return m;
  }
  if (api->init() != 0) {
    m.why_ = "nvmlInit failed";
    return m;
  }
  int found = -1;
  NvmlDevice dev = nullptr;
#if defined(NOEIRA_WITH_CUDA)
  int cuda_dev = 0;
  char bus[32] = {};
  if (api->handle_by_bus_id && cudaGetDevice(&cuda_dev) == cudaSuccess &&
      cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_dev) == cudaSuccess)
    found = api->handle_by_bus_id(bus, &dev);
#endif
  if (found != 0) found = api->handle_by_index(0, &dev);
  if (found != 0) {
    m.why_ = "NVML sees no device";
    api->shutdown();
    return m;
  }
  unsigned long long mj = 0;
  if (const int rc = api->total_energy(dev, &mj); rc != 0) {
    // NVML_ERROR_NOT_SUPPORTED = 3: GPUs before Volta have no such counter.
    m.why_ = rc == 3 ? "this GPU has no total-energy counter (NVML: not supported; Volta or later has one)"
                     : "NVML could not read the energy counter (error " + std::to_string(rc) + ")";
    api->shutdown();
    return m;
  }
  m.api_ = api;
  m.device_ = dev;
  m.available_ = true;
  m.scope_ = "the GPU board (NVML total energy)";
  return m;
}

EnergyMeter EnergyMeter::rapl(const fs::path& powercap) {
  EnergyMeter m;
  m.source_ = "rapl";
  std::error_code ec;
  if (!fs::is_directory(powercap, ec)) {
    m.why_ = "no RAPL: " + powercap.string() +
             " does not exist (no powercap driver: a VM or container, or not an x86 CPU)";
    return m;
  }
  // Package zones are the top-level intel-rapl:<N> (intel-rapl:<N>:<M> are its sub-zones).
  std::vector<fs::path> zones;
  for (const fs::directory_entry& e : fs::directory_iterator(powercap, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("intel-rapl:", 0) == 0 && name.find(':', 11) == std::string::npos) zones.push_back(e.path());
  }
  std::sort(zones.begin(), zones.end());
  if (zones.empty()) {
    m.why_ = "no RAPL: " + powercap.string() + " has no intel-rapl:<N> package zone";
    return m;
  }
  std::string names;
  for (const fs::path& z : zones) {
    Zone zone;
    zone.energy_uj = z / "energy_uj";
    std::string why;
    const std::optional<uint64_t> first = read_u64(zone.energy_uj, &why);
    if (!first) {
      m.why_ = "RAPL is not readable: " + why +
               (access(zone.energy_uj.c_str(), R_OK) != 0
                    ? " (energy_uj is readable by root only since Linux 5.10, CVE-2020-8694)"
                    : "");
      m.zones_.clear();
      return m;
    }
    zone.range_uj = read_u64(z / "max_energy_range_uj", nullptr).value_or(0);
    zone.last_uj = *first;
    zone.started = true;
    m.zones_.push_back(zone);
    names += (names.empty() ? "" : ", ") + z.filename().string();
  }
  m.available_ = true;
  m.scope_ = "CPU package zones " + names + " (every process on them, not only this run)";
  return m;
}

EnergyMeter EnergyMeter::for_target(bool gpu) {
  if (!gpu) return rapl();
  std::string why;
  const std::optional<NvmlEnergyApi> api = load_nvml_energy_api(&why);
  return nvml(api, why);
}

std::optional<double> EnergyMeter::read() {
  if (!available_) return std::nullopt;
  if (api_) {
    unsigned long long mj = 0;
    if (api_->total_energy(device_, &mj) != 0) {
      available_ = false;
      why_ = "NVML stopped reading the energy counter";
      return std::nullopt;
    }
    return static_cast<double>(mj) / 1000.0;
  }
  double total = 0;
  for (Zone& z : zones_) {
    std::string why;
    const std::optional<uint64_t> now = read_u64(z.energy_uj, &why);
    if (!now) {
      available_ = false;
      why_ = "RAPL stopped reading: " + why;
      return std::nullopt;
    }
    // The counter wraps at max_energy_range_uj (one wrap between two reads at most: reads
    // are seconds apart, a wrap takes minutes).
    uint64_t delta = *now >= z.last_uj ? *now - z.last_uj
                                        : (z.range_uj > z.last_uj ? z.range_uj - z.last_uj + *now : *now);
    z.total_j += static_cast<double>(delta) * 1e-6;
    z.last_uj = *now;
    total += z.total_j;
  }
  return total;
}

void EnergyWindow::start() {
  const std::optional<double> r = meter_.read();
  started_ = true;
  failed_ = !r;
  begin_ = r.value_or(0);
  excluded_ = 0;
  paused_ = false;
  clock_begin_ = Clock::now();
  excluded_seconds_ = 0;
  why_.clear();
}

void EnergyWindow::pause() {
  if (!started_ || failed_ || paused_) return;
  const std::optional<double> r = meter_.read();
  if (!r) {
    failed_ = true;
    return;
  }
  pause_at_ = *r;
  paused_ = true;
  clock_paused_ = Clock::now();
}

void EnergyWindow::resume() {
  if (!started_ || failed_ || !paused_) return;
  const std::optional<double> r = meter_.read();
  if (!r) {
    failed_ = true;
    return;
  }
  excluded_ += *r - pause_at_;
  excluded_seconds_ += std::chrono::duration<double>(Clock::now() - clock_paused_).count();
  paused_ = false;
}

std::optional<double> EnergyWindow::stop() {
  if (!started_) return std::nullopt;
  if (paused_) resume();
  started_ = false;
  if (failed_) return std::nullopt;
  const std::optional<double> r = meter_.read();
  if (!r) return std::nullopt;
  const double seconds =
      std::chrono::duration<double>(Clock::now() - clock_begin_).count() - excluded_seconds_;
  const double joules = *r - begin_ - excluded_;
  if (seconds < min_seconds_ || joules <= 0.0) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the timed steps took %.3f s, under the %.1f s the %s counter needs to resolve "
                  "them (it read %.3g J)",
                  seconds, min_seconds_, meter_.source().c_str(), joules);
    why_ = buf;
    return std::nullopt;
  }
  return joules;
}

}  // namespace noeira
