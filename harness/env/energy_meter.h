// Energy counters read around a run's timed steps (results: runs[].energy).
//   GPU: NVML's nvmlDeviceGetTotalEnergyConsumption (millijoules since the driver loaded;
//        Volta and later), from libnvidia-ml.so.1 loaded at run time as gpu_clocks.cpp
//        does. The NVML functions come through a table, so tests can hand in a fake.
//   CPU: RAPL through /sys/class/powercap/intel-rapl:<N>/energy_uj (one package zone
//        each, summed), wrapping at max_energy_range_uj. The counters cover each package
//        whole: every process on it, not only this run. Unreadable (no powercap driver in
//        a VM; energy_uj is root-only since Linux 5.10) means `n/a` with the reason.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace noeira {

// The NVML functions used, as nvml.h declares them (nvmlReturn_t an int, 0 = success).
struct NvmlEnergyApi {
  std::function<int()> init, shutdown;
  std::function<int(const char* pci_bus_id, void** device)> handle_by_bus_id;  // may be empty
  std::function<int(unsigned index, void** device)> handle_by_index;
  std::function<int(void* device, unsigned long long* millijoules)> total_energy;
};

// libnvidia-ml.so.1's functions, or nullopt with `why` (no driver, a driver too old).
// The library stays loaded for the process's life.
std::optional<NvmlEnergyApi> load_nvml_energy_api(std::string* why);

// A counter in joules that only goes up (wraparound handled), or why there is none.
class EnergyMeter {
 public:
  // NVML on the current CUDA device (by PCI bus id where the build has CUDA, else index 0).
  static EnergyMeter nvml(const std::optional<NvmlEnergyApi>& api, const std::string& why_not_loaded);
  // RAPL's package zones under `powercap` (default /sys/class/powercap).
  static EnergyMeter rapl(const std::filesystem::path& powercap = "/sys/class/powercap");
  // The meter for a run's target: NVML on the GPU, RAPL on the CPU.
  static EnergyMeter for_target(bool gpu);

  bool available() const { return available_; }
  const std::string& why() const { return why_; }        // when unavailable
  const std::string& source() const { return source_; }  // "nvml" | "rapl"
  const std::string& scope() const { return scope_; }
  // Joules since an arbitrary origin; nullopt when a read fails (the meter then becomes
  // unavailable, with the reason).
  std::optional<double> read();

 private:
  bool available_ = false;
  std::string why_, source_, scope_;
  // NVML
  std::optional<NvmlEnergyApi> api_;
  void* device_ = nullptr;
  // RAPL: per zone, its file, range, last raw value and accumulated joules.
  struct Zone {
    std::filesystem::path energy_uj;
    uint64_t range_uj = 0, last_uj = 0;
    double total_j = 0;
    bool started = false;
  };
  std::vector<Zone> zones_;
};

// A window shorter than this is not measured: NVML's counter moves in steps of tens of
// milliseconds (an H200 showed 0 J over 38 steps of 0.16 ms), RAPL's every millisecond or
// so; under a second, one step of the counter is more than a few percent of the reading.
inline constexpr double kMinEnergyWindowSeconds = 1.0;

// Joules between two readings of a meter, with the time in between to leave out
// (evaluations inside the timed window): start(), pause()/resume() around what is
// excluded, stop() -> joules, or nullopt when the meter failed on the way or the counted
// time was under `min_seconds` or the counter did not move (why() says so).
class EnergyWindow {
 public:
  explicit EnergyWindow(EnergyMeter& meter, double min_seconds = kMinEnergyWindowSeconds)
      : meter_(meter), min_seconds_(min_seconds) {}
  void start();
  void pause();
  void resume();
  std::optional<double> stop();
  bool started() const { return started_; }
  const std::string& why() const { return why_; }  // after a stop() that gave nullopt

 private:
  using Clock = std::chrono::steady_clock;
  EnergyMeter& meter_;
  bool started_ = false, failed_ = false, paused_ = false;
  double begin_ = 0, excluded_ = 0, pause_at_ = 0;
  Clock::time_point clock_begin_, clock_paused_;
  double min_seconds_, excluded_seconds_ = 0;
  std::string why_;
};

}  // namespace noeira
