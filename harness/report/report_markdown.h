#pragma once
#include <string>

#include "harness/report/report_data.h"
#include "harness/report/report_tables.h"

namespace noeira {

// The report as GitHub-flavoured markdown: the environment block (what every file shares,
// once; what differs, per file; warnings; baseline probes), step-time, ratio, accuracy
// and resource tables, parity and seed-agreement lines. summary (the suite's first
// table), when given, comes right after the environment block.
std::string render_markdown(const ReportData& d, const ReportTable* summary = nullptr);

}  // namespace noeira
