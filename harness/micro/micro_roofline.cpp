#include "harness/micro/micro_roofline.h"

#include <algorithm>

#include "harness/env/baseline_probe.h"
#include "harness/env/host_info.h"
#include "harness/report/number_format.h"

namespace noeira {

Roofline measure_cpu_roofline(int threads) {
  Roofline r;
  const std::string t = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  r.device = "CPU, " + t;
  const nlohmann::json peak = cpu_peak_estimate(host_info());
  if (peak.is_object()) {
    r.fp32_flops = peak.value("fp32_gflops_per_core", 0.0) * 1e9 * threads;
    r.bf16_flops = peak.value("bf16_gflops_per_core", 0.0) * 1e9 * threads;
    r.basis = "peak: the per-core estimate x " + t + " (" + peak.value("basis", std::string()) + ")";
  } else {
    r.basis = "peak: unknown (no clock in /proc/cpuinfo), FLOPs not rated";
  }
  const ProbeShape shape = probe_shape(Device::kCpu);
  Result<double> stream = run_stream_probe(Device::kCpu, threads);
  if (stream) {
    r.bytes_per_s = *stream;
    r.basis += "; bandwidth: measured now, y = max(x, 0) over " +
               std::to_string(shape.stream_mib) + " MiB arrays on " + t +
               " (best of repetitions)";
  } else {
    r.basis += "; bandwidth: the stream probe failed (" + stream.error().message +
               "), bytes not rated";
  }
  return r;
}

std::string render_cpu_roofline(const Roofline& r) {
  const auto gflops = [](double v) { return v > 0 ? format_number("%.0f", v / 1e9) : std::string("?"); };
  return "roofline (" + r.device + "): peak fp32 " + gflops(r.fp32_flops) + " GFLOP/s, bf16 " +
         gflops(r.bf16_flops) + " GFLOP/s; stream bandwidth " +
         (r.bytes_per_s > 0 ? format_number("%.1f", r.bytes_per_s / 1e9) : std::string("?")) +
         " GB/s\n  " + r.basis +
         "\n  roofline_pct = 100 x max(FLOPs / peak, operand bytes / bandwidth) / measured "
         "time per call; FLOPs count matrix products only (bf16 operands at the bf16 peak), "
         "bytes each operand once, so operands that stay in cache can pass 100%\n";
}

void add_roofline_context(const Roofline& r) {
  benchmark::AddCustomContext("noeira_roofline_device", r.device);
  benchmark::AddCustomContext("noeira_roofline_peak_fp32_gflops", format_number("%.1f", r.fp32_flops / 1e9));
  benchmark::AddCustomContext("noeira_roofline_peak_bf16_gflops", format_number("%.1f", r.bf16_flops / 1e9));
  benchmark::AddCustomContext("noeira_roofline_stream_gbs", format_number("%.2f", r.bytes_per_s / 1e9));
  benchmark::AddCustomContext("noeira_roofline_basis", r.basis);
}

void report_work(benchmark::State& state, const OpWork& w, const Roofline& r, double seconds,
                 const std::string& label) {
  state.SetBytesProcessed(static_cast<int64_t>(w.bytes * static_cast<double>(state.iterations())));
  if (w.flops > 0)
    state.counters["FLOP/s"] = benchmark::Counter(w.flops, benchmark::Counter::kIsIterationInvariantRate);
  const double peak = w.bf16_matrix ? r.bf16_flops : r.fp32_flops;
  const double compute = peak > 0 ? w.flops / peak : 0.0;
  const double memory = r.bytes_per_s > 0 ? w.bytes / r.bytes_per_s : 0.0;
  std::string bound;
  if (compute > 0 || memory > 0) {
    bound = compute > memory ? "compute-bound" : "memory-bound";
    if (seconds > 0 && state.iterations() > 0)
      state.counters["roofline_pct"] =
          100.0 * std::max(compute, memory) * static_cast<double>(state.iterations()) / seconds;
  }
  state.SetLabel(label + (label.empty() || bound.empty() ? "" : "; ") + bound);
}

}  // namespace noeira
