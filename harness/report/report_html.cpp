#include "harness/report/report_html.h"

#include <set>

#include "harness/report/html_escape.h"
#include "harness/report/report_resources.h"
#include "harness/report/report_tables.h"
#include "harness/report/svg_charts.h"

namespace noeira {

namespace {

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.6em; } h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.partial { background: #fff3cd; border: 1px solid #e0b400; padding: 0.4em 0.6em; }
.notes { font-size: 0.85em; color: #555; } .notes p { margin: 0.15em 0; }
section.model { border-top: 1px solid #ddd; margin-top: 1.5em; }
svg { display: block; margin: 0.5em 0; }
)";

// One color per variant column; ours cool, the twin's warm.
std::string color_for(const std::string& variant, const ReportData& d) {
  static const char* kPalette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#17becf",
                                   "#ff7f0e", "#d62728", "#8c564b", "#7f7f7f"};
  size_t i = 0;
  while (i < d.columns.size() && d.columns[i] != variant) ++i;
  return kPalette[i % (sizeof kPalette / sizeof kPalette[0])];
}

std::string table_html(const ReportTable& t) {
  std::string out = "<h2>" + html_escape(t.title) + "</h2>\n<table>\n<tr>";
  for (const std::string& h : t.rows[0]) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr>\n";
  for (size_t r = 1; r < t.rows.size(); ++r) {
    out += "<tr>";
    for (size_t c = 0; c < t.rows[r].size(); ++c) {
      const bool num = c < t.right_aligned.size() && t.right_aligned[c];
      out += std::string(num ? "<td class=\"num\">" : "<td>") + html_escape(t.rows[r][c]) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  if (!t.footnotes.empty()) {
    out += "<div class=\"notes\">";
    for (const std::string& f : t.footnotes) out += "<p>" + html_escape(f) + "</p>";
    out += "</div>\n";
  }
  return out;
}

std::string model_section(const ReportRow& row, const ReportData& d) {
  std::vector<BarItem> bars;
  std::vector<LineSeries> curves;
  std::set<std::string> timers;
  for (const std::string& name : d.columns) {
    const auto it = row.cells.find(name);
    if (it == row.cells.end()) continue;
    const ReportCell& c = it->second;
    BarItem b;
    b.label = name;
    b.color = color_for(name, d);
    b.measured = c.state == ReportCell::State::kMeasured;
    b.missing_text = step_time_text(c, false);
    b.median = c.median_ms;
    b.q1 = c.q1_ms;
    b.q3 = c.q3_ms;
    if (b.measured) timers.insert(c.timer);
    bars.push_back(b);
    if (!c.losses.empty()) curves.push_back({name, b.color, c.twin, c.losses});
  }
  const std::string axis = "median ms per step (" +
                           (timers.size() == 1 ? *timers.begin() + " timer" : "timers differ") +
                           "; whiskers q1-q3)";
  std::string out = "<section class=\"model\">\n<h3>" + html_escape(row.label) + " on " +
                    html_escape(row.dataset) + "</h3>\n";
  out += "<p class=\"notes\">from " + html_escape(row.source) + "</p>\n";
  out += svg_bar_chart(bars, axis);
  out += "<p class=\"notes\">Training loss per step, first seed, log scale (dashed: the PyTorch twin)</p>\n";
  out += svg_line_chart(curves, "step", "training loss (log scale)", true);
  if (std::string p = parity_text(row); !p.empty()) out += "<p>" + html_escape(p) + "</p>\n";
  return out + "</section>\n";
}

}  // namespace

std::string render_html(const ReportData& d, const ReportTable* summary,
                        const std::vector<SummaryPick>* picks) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>noeira-bench report</title>\n<style>" +
      std::string(kStyle) + "</style>\n</head>\n<body>\n<h1>noeira-bench report</h1>\n";
  for (const std::string& l : partial_lines(d))
    out += "<p class=\"partial\"><strong>PARTIAL</strong> " + html_escape(l) + "</p>\n";
  if (summary) out += table_html(*summary);
  if (picks && !picks->empty()) {
    // One bar per model: ours / twin (below 1: ours is faster).
    std::vector<BarItem> bars;
    for (const SummaryPick& p : *picks) {
      const double r = p.ours_ms / p.twin_ms;
      // The whisker: the ratio's 95% interval (none without one).
      const double lo = p.interval ? p.interval->lo : r, hi = p.interval ? p.interval->hi : r;
      bars.push_back({p.label + " (" + p.ours_variant + " / " + p.twin_variant + ")" + (p.noisy ? " noisy" : ""),
                      r <= 1.0 ? "#2ca02c" : "#d62728", true, "", r, lo, hi});
    }
    out += "<p class=\"notes\">Step time ratio, ours / twin (green: ours faster; whisker: its 95% "
           "bootstrap interval)</p>\n";
    out += svg_bar_chart(bars, "ours / twin median step time (1 = parity)", "x");
  }
  out += table_html(context_table(d));
  if (const ReportTable probes = probe_table(d); !probes.rows.empty()) out += table_html(probes);
  out += table_html(step_time_table(d));
  if (const ReportTable ratios = ratio_table(d); !ratios.rows.empty()) out += table_html(ratios);
  out += table_html(accuracy_table(d));
  if (const ReportTable r = resources_table(d); !r.rows.empty()) out += table_html(r);  // memory, time to target, energy
  const std::vector<std::string> lines = agreement_lines(d);
  if (!lines.empty()) {
    out += "<h2>Agreement with the twin</h2>\n<ul>\n";
    for (const std::string& l : lines) out += "<li>" + html_escape(l) + "</li>\n";
    out += "</ul>\n";
  }
  out += "<h2>Per model</h2>\n";
  for (const ReportRow& row : d.rows) out += model_section(row, d);
  return out + "</body>\n</html>\n";
}

}  // namespace noeira
