#include "harness/report/report_resources.h"

#include <algorithm>

#include "harness/run/resource_table.h"

namespace noeira {

void fill_resources(ReportData& d, const std::vector<LoadedResults>& files) {
  size_t k = 0;
  for (const LoadedResults& f : files)
    for (const BenchmarkRecord& b : f.results.benchmarks) {
      const std::string label = k < d.rows.size() ? d.rows[k].label : b.model;
      ++k;
      const TableRows rows = resource_rows(b, true);
      if (rows.size() < 2 || resource_notes(b).empty()) continue;
      if (d.resources.empty()) {
        d.resources.push_back({"model"});
        d.resources[0].insert(d.resources[0].end(), rows[0].begin(), rows[0].end());
      }
      for (size_t i = 1; i < rows.size(); ++i) {
        std::vector<std::string> row = {label};
        row.insert(row.end(), rows[i].begin(), rows[i].end());
        d.resources.push_back(std::move(row));
      }
      // How each was measured: one line each, the same line once.
      std::string notes = resource_notes(b);
      size_t at = 0;
      while (at < notes.size()) {
        const size_t nl = notes.find('\n', at);
        std::string line = notes.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        at = nl == std::string::npos ? notes.size() : nl + 1;
        if (line.empty()) continue;
        if (line.rfind("time to target:", 0) == 0) line = label + ": " + line;
        if (std::find(d.resource_notes.begin(), d.resource_notes.end(), line) == d.resource_notes.end())
          d.resource_notes.push_back(line);
      }
    }
}

ReportTable resources_table(const ReportData& d) {
  ReportTable t;
  t.title = "Memory, time to target, energy (per variant; step time from its best timer: (d) device, (e) event, (w) wall)";
  t.rows = d.resources;
  if (!t.rows.empty()) {
    t.right_aligned.assign(t.rows[0].size(), true);
    t.right_aligned[0] = t.right_aligned[1] = false;
  }
  t.footnotes = d.resource_notes;
  return t;
}

}  // namespace noeira
