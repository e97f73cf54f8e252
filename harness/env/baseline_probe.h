// The baseline probe: before anything is timed, each side (ours, and the twin in
// reference/twin/probe.py) runs the same three kernels on the same shapes -- an fp32 GEMM,
// a bf16 GEMM (both n x n x n) and a streaming kernel (y = max(x, 0) over arrays larger
// than the caches) -- at one thread and at the run's thread count. A ratio "ours / twin"
// means something only when both sides run their math libraries at a sane speed; a
// side far below the other, or below a fraction of the CPU's own peak (a reference BLAS,
// a BLAS that misdetected the CPU), is named in a warning wherever the ratio is shown.
//
// Results: context.probes (results/SCHEMA.md "Baseline probes"):
//   {gemm_n, stream_mib, method, peak (CPU: estimate per core), ours: {rows, math},
//    twin: {rows, math} | {error}}, with rows = [{threads, gemm_fp32_gflops,
//    gemm_bf16_gflops, stream_gbs}, ...] (threads null on a GPU).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "nn/memory_plan.h"

namespace noeira {

// The shapes both sides use (reference/twin/probe.py has the same constants). On a GPU a
// 1024^3 GEMM takes microseconds and 64 MiB streams tens of them, so launch and
// synchronisation latency were timed instead of the library (an H200 read 23 TFLOP/s for
// torch, 69 for us): there, 8192^3 (about 1.4 ms in bf16) and arrays far past the L2.
struct ProbeShape {
  int gemm_n;
  int stream_mib;  // per array
};
inline constexpr ProbeShape kCpuProbe{1024, 64};  // 64 MiB: past the L3 of the CPUs we run on
inline constexpr ProbeShape kGpuProbe{8192, 512};
inline constexpr ProbeShape probe_shape(Device device) {
  return device == Device::kGpu ? kGpuProbe : kCpuProbe;
}

// Our probe on `device`: rows for 1 thread and `threads` (one row when that is 1; one row
// with threads null on a GPU).
Result<nlohmann::json> run_our_probe(Device device, int threads);

// The streaming figure alone (y = max(x, 0) over two arrays of `array_bytes` each, 0:
// probe_shape(device).stream_mib MiB; best of repetitions; bytes read + written per
// second) on `threads` threads: what `micro` rates memory-bound kernels against, without
// the GEMM probes' seconds. min_timing_s > 0: each timing repeats the kernel for at least
// that long (cache-sized arrays).
Result<double> run_stream_probe(Device device, int threads, int64_t array_bytes = 0,
                                double min_timing_s = 0.0);

// The GEMM figures alone: FLOP/s of probe_shape(device).gemm_n^3 GEMMs, best of
// repetitions, on `threads` threads; bf16 0 where the backend has no bf16 matmul.
struct GemmRates {
  double fp32 = 0, bf16 = 0;
};
Result<GemmRates> run_gemm_probe(Device device, int threads);

// The whole probes object of a run: ours on `device`, the twin's through `twin_python`
// (skipped when empty: no twin timed), the CPU's peak estimate, shapes and method.
nlohmann::json measure_baseline_probes(Device device, int threads, const std::string& twin_python,
                                       const std::filesystem::path& log_dir, double timeout_seconds);

// The CPU's fp32 and bf16 peak per core, estimated from its vector units and clock
// (host_info()'s cpu_features and /proc/cpuinfo's MHz): {fp32_gflops_per_core,
// bf16_gflops_per_core, basis}; null when the clock is unknown.
nlohmann::json cpu_peak_estimate(const nlohmann::json& host);

// The warnings a probes object calls for (empty when both sides look sane): a side whose
// figure is under a third of the other's, or whose one-thread fp32 GEMM is under 15% of
// the CPU's estimated per-core peak.
std::vector<std::string> probe_warnings(const nlohmann::json& probes);

// A probes object's figures for a table, read leniently (a value of another type reads as
// absent): one row per side and thread count, or one per side whose probe failed.
struct ProbeRow {
  std::string side;     // "ours" | "twin"
  bool failed = false;  // the side's probe failed (no figures then): `error` says why
  std::string error;
  std::optional<int> threads;  // null: on the device
  std::optional<double> gemm_fp32_gflops, gemm_bf16_gflops, stream_gbs;
  std::string math = "-";  // the side's math libraries (math.summary)
};
std::vector<ProbeRow> probe_rows(const nlohmann::json& probes);

// The CPU's peak estimate a probes object holds (cpu_peak_estimate), if any.
struct PeakEstimate {
  double fp32_gflops_per_core = 0, bf16_gflops_per_core = 0;
  std::string basis;
};
std::optional<PeakEstimate> probe_peak(const nlohmann::json& probes);

// One line per side for `env` and the run's header: "ours: fp32 GEMM 95 / 180 GFLOP/s,
// bf16 ..., stream ... GB/s (1 / 2 threads)".
std::string render_probes(const nlohmann::json& probes);

}  // namespace noeira
