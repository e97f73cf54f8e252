#include "harness/report/report_probes.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "harness/env/baseline_probe.h"
#include "harness/report/number_format.h"

namespace noeira {

namespace {

std::string name_of(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// "95.1", or "95.1 (93.0-97.2)" over files that differ: the median and the range.
std::string figure(std::vector<double> values) {
  if (values.empty()) return "-";
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
  std::string s = format_number("%.1f", median);
  const std::string lo = format_number("%.1f", values.front()), hi = format_number("%.1f", values.back());
  if (lo != hi) s += " (" + lo + "-" + hi + ")";
  return s;
}

std::string join(const std::set<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

struct Figures {
  std::vector<double> fp32, bf16, stream;
  std::set<std::string> math;
};

}  // namespace

ReportTable probe_table(const ReportData& d) {
  ReportTable t;
  // Rows by side ("ours" before "twin"), then thread count (the device's row: -1).
  std::map<std::pair<std::string, int>, Figures> rows;
  std::map<std::pair<std::string, std::string>, std::set<std::string>> failures;  // (side, error) -> files
  std::set<std::string> peaks;
  size_t with_probes = 0;
  for (const ReportContext& c : d.contexts) {
    if (!c.probes) continue;
    ++with_probes;
    for (const ProbeRow& r : probe_rows(*c.probes)) {
      if (r.failed) {
        failures[{r.side, r.error}].insert(name_of(c.source));
        continue;
      }
      Figures& f = rows[{r.side, r.threads.value_or(-1)}];
      if (r.gemm_fp32_gflops) f.fp32.push_back(*r.gemm_fp32_gflops);
      if (r.gemm_bf16_gflops) f.bf16.push_back(*r.gemm_bf16_gflops);
      if (r.stream_gbs) f.stream.push_back(*r.stream_gbs);
      f.math.insert(r.math);
    }
    if (const std::optional<PeakEstimate> peak = probe_peak(*c.probes))
      peaks.insert("CPU peak estimate per core: fp32 " + format_number("%.1f", peak->fp32_gflops_per_core) +
                   ", bf16 " + format_number("%.1f", peak->bf16_gflops_per_core) + " GFLOP/s (" +
                   peak->basis + ")");
  }
  if (with_probes == 0) return t;
  t.title = "Baseline probes (best of repetitions, before timing" +
            std::string(with_probes > 1 ? "; median over the files, their range in brackets" : "") + ")";
  t.rows.push_back({"side", "threads", "fp32 GEMM GFLOP/s", "bf16 GEMM GFLOP/s", "stream GB/s", "math"});
  t.right_aligned = {false, true, true, true, true, false};
  for (const auto& [key, f] : rows)
    t.rows.push_back({key.first, key.second < 0 ? "device" : std::to_string(key.second), figure(f.fp32),
                      figure(f.bf16), figure(f.stream), join(f.math, "; ")});
  for (const auto& [key, files] : failures)
    t.rows.push_back({key.first, "-", "-", "-", "-",
                      "probe failed: " + key.second +
                          (files.size() < with_probes ? " (" + join(files, ", ") + ")" : "")});
  if (with_probes < d.contexts.size())
    t.footnotes.push_back("Probes of " + std::to_string(with_probes) + " of " + std::to_string(d.contexts.size()) +
                          " results files (files written before schema version 2 have none).");
  t.footnotes.insert(t.footnotes.end(), peaks.begin(), peaks.end());
  return t;
}

}  // namespace noeira
