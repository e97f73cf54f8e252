// The report's comparison tables (step time, ratios, test top-1) with their footnotes,
// shared by the markdown and HTML renderers (the environment block's tables:
// harness/report/report_environment.h).
#pragma once
#include <string>
#include <vector>

#include "harness/report/report_data.h"
#include "harness/report/text_table.h"

namespace noeira {

struct ReportTable {
  std::string title;
  TableRows rows;  // header first: model, then one column per variant
  std::vector<bool> right_aligned;
  std::vector<std::string> footnotes;  // "[1] twin:graphs unavailable: ..."
};

// Median ms per training step; "n/a [k]" / "failed [k]" cells point at footnotes.
ReportTable step_time_table(const ReportData& d);
// Each variant's median step time over the same row's twin:eager (fp32 and bf16 rows of
// ours also over our eager), with the 95% interval and the noisy mark, reasons in
// footnotes; no rows when no row has a measured twin:eager.
ReportTable ratio_table(const ReportData& d);
// Test top-1 %, mean ± std over seeds.
ReportTable accuracy_table(const ReportData& d);
// Parity and seed-agreement lines of every row that has them.
std::vector<std::string> agreement_lines(const ReportData& d);

}  // namespace noeira
