#include "harness/micro/micro_roofline.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "harness/env/baseline_probe.h"
#include "harness/env/cpu_caches.h"
#include "harness/env/host_info.h"
#include "harness/report/number_format.h"

namespace noeira {

namespace {

// Per timing of a stream level: the L2 set's call takes microseconds, under the clock's
// resolution and the fork/join's noise; 20 ms of repeated calls is not.
constexpr double kMinTiming = 0.02;
constexpr double kMiB = 1024.0 * 1024.0;

std::string size_text(double bytes) {
  if (bytes < kMiB) return format_number("%.0f KiB", bytes / 1024.0);
  const double m = bytes / kMiB;
  return format_number(m == std::floor(m) ? "%.0f MiB" : "%.1f MiB", m);
}

std::string gflops(double v) { return v > 0 ? format_number("%.0f", v / 1e9) : std::string("?"); }
std::string gbs(double v) { return v > 0 ? format_number(v >= 100e9 ? "%.0f" : "%.1f", v / 1e9) : std::string("?"); }

void measure_peak(MicroRoofline& r, int threads, const std::string& t) {
  const nlohmann::json peak = cpu_peak_estimate(host_info());
  std::string est = "unknown (no clock in /proc/cpuinfo)";
  if (peak.is_object()) {
    r.fp32_estimate = peak.value("fp32_gflops_per_core", 0.0) * 1e9 * threads;
    r.bf16_estimate = peak.value("bf16_gflops_per_core", 0.0) * 1e9 * threads;
    est = "fp32 " + gflops(r.fp32_estimate) + " / bf16 " + gflops(r.bf16_estimate) +
          " GFLOP/s, the per-core estimate x " + t + " (" + peak.value("basis", std::string()) + ")";
  }
  std::string gemm;
  const int n = probe_shape(Device::kCpu).gemm_n;
  if (Result<GemmRates> g = run_gemm_probe(Device::kCpu, threads)) {
    r.fp32_gemm = g->fp32, r.bf16_gemm = g->bf16;
    gemm = "here a " + std::to_string(n) + "^3 GEMM measured now on " + t + ": fp32 " + gflops(g->fp32) +
           " / bf16 " + (g->bf16 > 0 ? gflops(g->bf16) : std::string("n/a")) + " GFLOP/s";
  } else {
    gemm = "the GEMM probe failed: " + g.error().message;
  }
  r.fp32_flops = std::max(r.fp32_estimate, r.fp32_gemm);
  r.bf16_flops = std::max(r.bf16_estimate, r.bf16_gemm);
  r.basis.push_back("peak = the larger of an estimate and a measured GEMM, per dtype. Estimate: " + est);
  r.basis.push_back("The estimate is from the nominal clock /proc/cpuinfo reports; cores that turbo run "
                    "GEMMs faster (" + gemm + "), and other GEMM shapes may still pass 100%");
}

void measure_bandwidth(MicroRoofline& r, int threads, const std::string& t) {
  const CpuCaches c = cpu_caches();
  r.l2_cache = c.l2_bytes, r.l3_cache = c.l3_bytes;
  const double l2 = static_cast<double>(c.l2_bytes) / 2.0 * threads;
  // A few large L2s can outgrow half the L3: then no op is rated at L3 (L2 comes first).
  const double l3 = std::max(static_cast<double>(c.l3_bytes) / 2.0, l2);
  const double dram = 2.0 * probe_shape(Device::kCpu).stream_mib * kMiB;
  const struct {
    const char* name;
    double set;
  } sets[] = {{"L2", l2}, {"L3", l3}, {"DRAM", dram}};
  std::string failed;
  for (const auto& s : sets) {
    const int64_t ns = std::max<int64_t>(static_cast<int64_t>(s.set / 8.0), 1);  // floats per array
    BandwidthLevel lv{s.name, 8.0 * static_cast<double>(ns), 0.0};
    if (Result<double> bw = run_stream_probe(Device::kCpu, threads, ns * 4, kMinTiming))
      lv.bytes_per_s = *bw;
    else
      failed += std::string("; ") + s.name + " probe failed (" + bw.error().message + ")";
    r.levels.push_back(lv);
  }
  r.basis.push_back("caches (" + c.source + "): L2 " + size_text(static_cast<double>(c.l2_bytes)) +
                    " per core, L3 " + size_text(static_cast<double>(c.l3_bytes)) +
                    "; bandwidth: y = max(x, 0) measured now on " + t + " over in + out arrays of " +
                    size_text(r.levels[0].set_bytes) + " (L2: half of L2 x threads), " +
                    size_text(r.levels[1].set_bytes) + " (L3: half of L3), " +
                    size_text(r.levels[2].set_bytes) +
                    " (DRAM: the probe's arrays); timings of >= 20 ms of calls, best of repetitions" + failed);
}

}  // namespace

const BandwidthLevel* MicroRoofline::level_for(double bytes) const {
  const BandwidthLevel* last = nullptr;
  for (const BandwidthLevel& lv : levels) {
    if (lv.bytes_per_s <= 0) continue;
    if (bytes <= lv.set_bytes) return &lv;
    last = &lv;
  }
  return last;
}

double MicroRoofline::dram_bytes_per_s() const {
  for (const BandwidthLevel& lv : levels)
    if (lv.name == "DRAM") return lv.bytes_per_s;
  return 0.0;
}

MicroRoofline measure_cpu_roofline(int threads) {
  MicroRoofline r;
  const std::string t = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  r.device = "CPU, " + t;
  measure_peak(r, threads, t);
  measure_bandwidth(r, threads, t);
  return r;
}

std::string render_cpu_roofline(const MicroRoofline& r) {
  std::string bw;
  for (const BandwidthLevel& lv : r.levels) bw += (bw.empty() ? "" : ", ") + lv.name + " " + gbs(lv.bytes_per_s);
  std::string out = "roofline (" + r.device + "): peak fp32 " + gflops(r.fp32_flops) + " GFLOP/s, bf16 " +
                    gflops(r.bf16_flops) + " GFLOP/s; stream bandwidth " + bw + " GB/s\n";
  for (const std::string& line : r.basis) out += "  " + line + "\n";
  return out +
         "  roofline_pct = 100 x max(FLOPs / peak, operand bytes / bandwidth) / measured time per "
         "call, the bandwidth of the smallest level whose working set holds the op's bytes (label: "
         "memory-bound (L2|L3|DRAM)); FLOPs count matrix products only (bf16 operands at the bf16 "
         "peak), bytes each operand once\n";
}

void add_roofline_context(const MicroRoofline& r) {
  const auto put = [](const std::string& key, const char* fmt, double v) {
    benchmark::AddCustomContext("noeira_roofline_" + key, format_number(fmt, v));
  };
  benchmark::AddCustomContext("noeira_roofline_device", r.device);
  put("peak_fp32_gflops", "%.1f", r.fp32_flops / 1e9);
  put("peak_bf16_gflops", "%.1f", r.bf16_flops / 1e9);
  put("estimate_fp32_gflops", "%.1f", r.fp32_estimate / 1e9);
  put("estimate_bf16_gflops", "%.1f", r.bf16_estimate / 1e9);
  put("gemm_fp32_gflops", "%.1f", r.fp32_gemm / 1e9);
  put("gemm_bf16_gflops", "%.1f", r.bf16_gemm / 1e9);
  put("stream_gbs", "%.2f", r.dram_bytes_per_s() / 1e9);  // DRAM, the key's old meaning
  for (const BandwidthLevel& lv : r.levels) {
    std::string k = lv.name;
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (k != "dram") put(k + "_gbs", "%.2f", lv.bytes_per_s / 1e9);
    put(k + "_set_bytes", "%.0f", lv.set_bytes);
  }
  put("l2_bytes", "%.0f", static_cast<double>(r.l2_cache));
  put("l3_bytes", "%.0f", static_cast<double>(r.l3_cache));
  std::string basis;
  for (const std::string& line : r.basis) basis += (basis.empty() ? "" : " | ") + line;
  benchmark::AddCustomContext("noeira_roofline_basis", basis);
}

void report_work(benchmark::State& state, const OpWork& w, const MicroRoofline& r, double seconds,
                 const std::string& label) {
  state.SetBytesProcessed(static_cast<int64_t>(w.bytes * static_cast<double>(state.iterations())));
  if (w.flops > 0)
    state.counters["FLOP/s"] = benchmark::Counter(w.flops, benchmark::Counter::kIsIterationInvariantRate);
  const double peak = w.bf16_matrix ? r.bf16_flops : r.fp32_flops;
  const double compute = peak > 0 ? w.flops / peak : 0.0;
  const BandwidthLevel* lv = r.level_for(w.bytes);
  const double memory = lv ? w.bytes / lv->bytes_per_s : 0.0;
  std::string bound;
  if (compute > 0 || memory > 0) {
    bound = compute > memory ? std::string("compute-bound") : "memory-bound (" + lv->name + ")";
    if (seconds > 0 && state.iterations() > 0)
      state.counters["roofline_pct"] =
          100.0 * std::max(compute, memory) * static_cast<double>(state.iterations()) / seconds;
  }
  state.SetLabel(label + (label.empty() || bound.empty() ? "" : "; ") + bound);
}

}  // namespace noeira
