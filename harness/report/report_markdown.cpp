#include "harness/report/report_markdown.h"

#include "harness/report/report_resources.h"
#include "harness/report/report_tables.h"

namespace noeira {

namespace {

std::string section(const ReportTable& t) {
  std::string out = "## " + t.title + "\n\n" + render_markdown_table(t.rows, t.right_aligned);
  if (!t.footnotes.empty()) {
    out += "\n";
    for (const std::string& f : t.footnotes) out += f + "  \n";  // hard line breaks
  }
  return out + "\n";
}

}  // namespace

std::string render_markdown(const ReportData& d, const ReportTable* summary) {
  std::string out = "# noeira-bench report\n\n";
  // A stopped run's file first: its tables lack what the run did not finish.
  for (const std::string& l : partial_lines(d)) out += "> **PARTIAL** " + l + "\n\n";
  if (summary) out += section(*summary);
  out += section(context_table(d));
  if (const ReportTable probes = probe_table(d); !probes.rows.empty()) out += section(probes);
  out += section(step_time_table(d));
  if (const ReportTable ratios = ratio_table(d); !ratios.rows.empty()) out += section(ratios);
  out += section(accuracy_table(d));
  if (const ReportTable r = resources_table(d); !r.rows.empty()) out += section(r);  // memory, time to target, energy
  const std::vector<std::string> lines = agreement_lines(d);
  if (!lines.empty()) {
    out += "## Agreement with the twin\n\n";
    for (const std::string& l : lines) out += "- " + l + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace noeira
