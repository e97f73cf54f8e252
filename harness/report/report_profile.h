// The report's profile section (files written by `noeira-bench profile`): per model, a
// stacked bar per side (ours, each twin mode) of ms per step by op category, the
// unattributed remainder last, and the same numbers as a table. "" when no file has one.
#pragma once
#include <string>

#include "harness/report/report_data.h"

namespace noeira {

std::string profile_html(const ReportData& d);
std::string profile_markdown(const ReportData& d);

}  // namespace noeira
