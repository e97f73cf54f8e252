// This CPU's roofline for `noeira-bench micro`, and each benchmark's place under it.
//
// Peak FLOP/s: the per-core estimate of harness/env/baseline_probe.h (cpu_peak_estimate:
// vector units x clock, an estimate, not a measurement) times the threads the kernels run
// on. Bandwidth: the baseline probe's streaming kernel (y = max(x, 0) over arrays larger
// than the caches) measured once at start-up on those threads. An op's time at the
// roofline is max(FLOPs / peak, operand bytes / bandwidth); matrix work on bf16 operands
// counts at the bf16 peak (harness/profile/roofline.h has the same rule for GPUs).
#pragma once
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "harness/profile/roofline.h"

namespace noeira {

// What one call of an op computes and moves.
struct OpWork {
  double flops = 0;          // matrix products and convolutions, 2 per multiply-add; else 0
  double bytes = 0;          // operands read + written, once each (a lower bound on traffic)
  bool bf16_matrix = false;  // flops on bf16 operands: rated at the bf16 peak
};

// The figures for `threads` threads (resolved, >= 1). A figure that cannot be had stays 0
// and `basis` says why.
Roofline measure_cpu_roofline(int threads);

// The lines `micro` prints before Google Benchmark's table, and the same figures as
// Google Benchmark context entries (noeira_roofline_*: in --benchmark_format=json's
// "context").
std::string render_cpu_roofline(const Roofline& r);
void add_roofline_context(const Roofline& r);

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
// then "memory-bound" or "compute-bound" (the larger roofline term).
void report_work(benchmark::State& state, const OpWork& w, const Roofline& r, double seconds,
                 const std::string& label = "");

}  // namespace noeira
