#include "harness/report/report_html.h"

#include <set>

#include "harness/report/html_escape.h"
#include "harness/report/report_charts.h"
#include "harness/report/report_environment.h"
#include "harness/report/report_resources.h"
#include "harness/report/report_tables.h"
#include "harness/report/report_profile.h"
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
svg { display: block; margin: 0.5em 0; max-width: 100%; height: auto; }
.warning { background: #fde2e1; border: 1px solid #d62728; padding: 0.4em 0.6em; }
table.env th { text-align: left; font-weight: 600; white-space: nowrap; }
)";

std::string table_html(const ReportTable& t, const char* heading = "h2") {
  std::string out = std::string("<") + heading + ">" + html_escape(t.title) + "</" + heading + ">\n<table>\n<tr>";
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

// Once, at the top: what every file shares, what differs by file, the warnings, the probes.
std::string environment_html(const ReportData& d) {
  const EnvironmentBlock b = environment_block(d);
  std::string out = "<section class=\"environment\">\n<h2>Environment</h2>\n<p class=\"notes\">" +
                    html_escape(b.files) + "</p>\n";
  for (const std::string& w : b.dirty)
    out += "<p class=\"warning\"><strong>WARNING</strong> " + html_escape(w) + "</p>\n";
  if (!b.shared.empty()) {
    out += "<table class=\"env\">\n";
    for (const EnvField& f : b.shared)
      out += "<tr><th>" + html_escape(f.name) + "</th><td>" + html_escape(f.value) + "</td></tr>\n";
    out += "</table>\n";
  }
  if (!b.same_note.empty()) out += "<p class=\"notes\">" + html_escape(b.same_note) + "</p>\n";
  if (!b.per_file.rows.empty()) out += table_html(b.per_file, "h3");
  for (const std::string& w : b.warnings) out += "<p class=\"partial\">warning: " + html_escape(w) + "</p>\n";
  if (!b.probes.rows.empty()) out += table_html(b.probes, "h3");
  return out + "</section>\n";
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
    b.color = variant_color(name, d);
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
  out += environment_html(d);
  if (summary) out += table_html(*summary);
  if (picks) out += ratio_chart_html(ratio_points(*picks), "Ours / twin per model (the best of each side)");
  out += table_html(step_time_table(d));
  if (const ReportTable ratios = ratio_table(d); !ratios.rows.empty()) out += table_html(ratios);
  out += ratio_chart_html(ratio_points(d), "Step-time ratio per variant, ours / twin");
  out += table_html(accuracy_table(d));
  if (const ReportTable r = resources_table(d); !r.rows.empty()) out += table_html(r);  // memory, time to target, energy
  out += memory_charts_html(d);
  out += profile_html(d);  // noeira-bench profile files
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
