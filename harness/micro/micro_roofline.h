// This CPU's roofline for `noeira-bench micro`, and each benchmark's place under it.
//
// Peak FLOP/s, per dtype: the larger of the per-core estimate of harness/env/
// baseline_probe.h (cpu_peak_estimate: vector units x the nominal clock /proc/cpuinfo
// reports) times the threads, and the baseline probe's GEMM measured now on those
// threads: cores that turbo run GEMMs past the estimate.
// Bandwidth, cache-aware: the probe's streaming kernel (y = max(x, 0)) measured at
// start-up on those threads over three working sets (in + out arrays): half the L2 per
// thread, half the L3, and the probe's 64 MiB arrays (DRAM). Google Benchmark repeats an
// op on the same buffers, so an op whose operands fit a cache streams from it: rated
// against DRAM, fp32 element-wise ops read 200-400%.
// An op's time at the roofline is max(FLOPs / peak, operand bytes / bandwidth of the
// smallest level whose working set holds those bytes); matrix work on bf16 operands
// counts at the bf16 peak (harness/profile/roofline.h has the same rule for GPUs).
#pragma once
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace noeira {

// What one call of an op computes and moves.
struct OpWork {
  double flops = 0;          // matrix products and convolutions, 2 per multiply-add; else 0
  double bytes = 0;          // operands read + written, once each (a lower bound on traffic)
  bool bf16_matrix = false;  // flops on bf16 operands: rated at the bf16 peak
};

// The streaming kernel's rate over one working set.
struct BandwidthLevel {
  std::string name;        // "L2", "L3", "DRAM"
  double set_bytes = 0;    // in + out arrays together
  double bytes_per_s = 0;  // 0: not measured (the probe failed)
};

struct MicroRoofline {
  std::string device;                      // "CPU, 2 threads"
  double fp32_flops = 0, bf16_flops = 0;   // the roofs: max(estimate, gemm) per dtype
  double fp32_estimate = 0, bf16_estimate = 0;
  double fp32_gemm = 0, bf16_gemm = 0;     // the GEMM probe now (0: not measured)
  int64_t l2_cache = 0, l3_cache = 0;      // harness/env/cpu_caches.h
  std::vector<BandwidthLevel> levels;      // L2, L3, DRAM
  std::vector<std::string> basis;          // where the figures come from, a line each

  // The level an op moving `bytes` is rated at: the first measured one whose working set
  // holds them, else the last measured; null when none was.
  const BandwidthLevel* level_for(double bytes) const;
  double dram_bytes_per_s() const;
};

// The figures for `threads` threads (resolved, >= 1): a few tenths of a second. A figure
// that cannot be had stays 0 and `basis` says why.
MicroRoofline measure_cpu_roofline(int threads);

// The lines `micro` prints before Google Benchmark's table, and the same figures as
// Google Benchmark context entries (noeira_roofline_*: in --benchmark_format=json's
// "context").
std::string render_cpu_roofline(const MicroRoofline& r);
void add_roofline_context(const MicroRoofline& r);

// Runs `call` in Google Benchmark's timed loop; returns the loop's wall seconds (our own
// clock around it, for roofline_pct: Google Benchmark's own time is not readable here).
template <class F>
double timed_loop(benchmark::State& state, F&& call) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Sets the counters after the loop: bytes_per_second, FLOP/s (when flops > 0),
// roofline_pct = 100 x roofline time / measured time per call, and the label: `label`
// then "compute-bound" or "memory-bound (<level>)" (the larger roofline term).
void report_work(benchmark::State& state, const OpWork& w, const MicroRoofline& r, double seconds,
                 const std::string& label = "");

}  // namespace noeira
