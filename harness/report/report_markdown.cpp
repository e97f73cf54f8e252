#include "harness/report/report_markdown.h"

#include "harness/report/report_environment.h"
#include "harness/report/report_profile.h"
#include "harness/report/report_resources.h"
#include "harness/report/report_tables.h"

namespace noeira {

namespace {

std::string section(const ReportTable& t, const char* level = "##") {
  std::string out = std::string(level) + " " + t.title + "\n\n" + render_markdown_table(t.rows, t.right_aligned);
  if (!t.footnotes.empty()) {
    out += "\n";
    for (const std::string& f : t.footnotes) out += f + "  \n";  // hard line breaks
  }
  return out + "\n";
}

// Once, at the top: what every file shares, what differs by file, the warnings, the probes.
std::string environment(const ReportData& d) {
  const EnvironmentBlock b = environment_block(d);
  std::string out = "## Environment\n\n" + b.files + "\n\n";
  for (const std::string& w : b.dirty) out += "> **WARNING** " + w + "\n\n";
  if (!b.shared.empty()) {
    TableRows rows = {{"field", d.contexts.size() < 2 ? std::string("value")
                                                      : "shared by all " + std::to_string(d.contexts.size()) + " files"}};
    for (const EnvField& f : b.shared) rows.push_back({f.name, f.value});
    out += render_markdown_table(rows, {}) + "\n";
  }
  if (!b.same_note.empty()) out += b.same_note + "\n\n";
  if (!b.per_file.rows.empty()) out += section(b.per_file, "###");
  if (!b.warnings.empty()) {
    for (const std::string& w : b.warnings) out += "warning: " + w + "  \n";
    out += "\n";
  }
  if (!b.probes.rows.empty()) out += section(b.probes, "###");
  return out;
}

}  // namespace

std::string render_markdown(const ReportData& d, const ReportTable* summary) {
  std::string out = "# noeira-bench report\n\n";
  // A stopped run's file first: its tables lack what the run did not finish.
  for (const std::string& l : partial_lines(d)) out += "> **PARTIAL** " + l + "\n\n";
  out += environment(d);
  if (summary) out += section(*summary);
  out += section(step_time_table(d));
  if (const ReportTable ratios = ratio_table(d); !ratios.rows.empty()) out += section(ratios);
  out += section(accuracy_table(d));
  if (const ReportTable r = resources_table(d); !r.rows.empty()) out += section(r);  // memory, time to target, energy
  out += profile_markdown(d);  // noeira-bench profile files
  const std::vector<std::string> lines = agreement_lines(d);
  if (!lines.empty()) {
    out += "## Agreement with the twin\n\n";
    for (const std::string& l : lines) out += "- " + l + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace noeira
