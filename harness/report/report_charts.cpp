#include "harness/report/report_charts.h"

#include "harness/report/html_escape.h"
#include "harness/run/ratio_interval.h"

namespace noeira {

namespace {

RatioPoint point(const std::string& label, double ratio, const CellRatio& r) {
  RatioPoint p;
  p.label = label;
  p.ratio = r.interval ? r.interval->ratio : ratio;
  if (r.interval) {
    p.lo = r.interval->lo;
    p.hi = r.interval->hi;
  }
  p.noisy = r.noisy;
  p.note = r.reason;
  return p;
}

// The twin's fastest measured mode in the row, or none.
const ReportCell* fastest_twin(const ReportRow& row, std::string* name) {
  const ReportCell* best = nullptr;
  for (const auto& [variant, c] : row.cells)
    if (c.twin && c.state == ReportCell::State::kMeasured && (!best || c.median_ms < best->median_ms)) {
      best = &c;
      *name = variant;
    }
  return best;
}

}  // namespace

std::string variant_color(const std::string& variant, const ReportData& d) {
  static const char* kPalette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#17becf",
                                   "#ff7f0e", "#d62728", "#8c564b", "#7f7f7f"};
  size_t i = 0;
  while (i < d.columns.size() && d.columns[i] != variant) ++i;
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

std::vector<RatioPoint> ratio_points(const ReportData& d) {
  std::vector<RatioPoint> out;
  for (const ReportRow& row : d.rows) {
    std::string twin_name;
    const ReportCell* twin = fastest_twin(row, &twin_name);
    if (!twin) continue;
    for (const std::string& name : d.columns) {
      const auto it = row.cells.find(name);
      if (it == row.cells.end() || it->second.twin || it->second.state != ReportCell::State::kMeasured) continue;
      const CellRatio r = cell_ratio(it->second, *twin);
      out.push_back(point(row.label + " " + name + " / " + twin_name, r.ratio, r));
    }
  }
  return out;
}

std::vector<RatioPoint> ratio_points(const std::vector<SummaryPick>& picks) {
  std::vector<RatioPoint> out;
  for (const SummaryPick& p : picks) {
    CellRatio r;
    r.ratio = p.twin_ms > 0 ? p.ours_ms / p.twin_ms : 0.0;
    r.interval = p.interval;
    r.noisy = p.noisy;
    out.push_back(point(p.label + " (" + p.ours_variant + " / " + p.twin_variant + ")", r.ratio, r));
  }
  return out;
}

std::vector<MemoryGroup> memory_groups(const ReportData& d, bool device) {
  std::vector<MemoryGroup> out;
  for (const ReportRow& row : d.rows) {
    MemoryGroup g;
    g.label = row.label;
    const bool plan_here = (row.target == "gpu") == device;
    for (const std::string& name : d.columns) {
      const auto it = row.cells.find(name);
      if (it == row.cells.end()) continue;
      const ReportCell& c = it->second;
      const std::optional<int64_t>& bytes = device ? c.resources.device_bytes : c.resources.peak_rss_bytes;
      if (!bytes) continue;
      MemoryBar b;
      b.label = name;
      b.color = variant_color(name, d);
      b.bytes = *bytes;
      if (plan_here && !c.twin) b.plan.assign(c.plan_bytes.begin(), c.plan_bytes.end());
      g.bars.push_back(std::move(b));
    }
    if (!g.bars.empty()) out.push_back(std::move(g));
  }
  return out;
}

std::string ratio_chart_html(const std::vector<RatioPoint>& points, const std::string& title) {
  if (points.empty()) return "";
  return "<h2>" + html_escape(title) + "</h2>\n<p class=\"notes\">Points: median step time, ours / twin; "
         "bars: the ratio's 95% interval (" + html_escape(interval_method_note()) +
         "). Left of the dashed line at 1: ours is faster. Hollow orange points are noisy (interval wider than "
         "&plusmn;10%, or none).</p>\n" +
         svg_ratio_chart(points, "ours / twin median step time (log scale; 1 = parity)");
}

std::string memory_charts_html(const ReportData& d) {
  std::string out;
  const std::vector<MemoryGroup> host = memory_groups(d, false), gpu = memory_groups(d, true);
  if (host.empty() && gpu.empty()) return out;
  out += "<h2>Peak memory, ours vs the twin</h2>\n<p class=\"notes\">Bars: the peak per variant (the maximum "
         "over its seeds). The strip inside our bars: the memory plan's arenas by category, allocated once.";
  out += " The twin's process holds the Python interpreter and torch besides the training.</p>\n";
  if (!gpu.empty()) out += svg_memory_chart(gpu, "GPU memory: ours in use, the twin's torch max allocated");
  if (!host.empty()) out += svg_memory_chart(host, "peak resident set (RSS) of the process");
  return out;
}

}  // namespace noeira
