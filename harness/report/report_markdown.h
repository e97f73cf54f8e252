#pragma once
#include <string>

#include "harness/report/report_data.h"
#include "harness/report/report_tables.h"

namespace noeira {

// The report as GitHub-flavoured markdown: context, step-time table, accuracy table,
// parity and seed-agreement lines.
// summary (the suite's first table), when given, comes first.
std::string render_markdown(const ReportData& d, const ReportTable* summary = nullptr);

}  // namespace noeira
