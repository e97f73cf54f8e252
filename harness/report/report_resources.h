// The report's "Memory, time to target, energy" table: one row per model and variant
// (harness/run/resource_table.h's columns), with how each was measured under it.
#pragma once
#include <vector>

#include "harness/report/report_data.h"
#include "harness/report/report_tables.h"

namespace noeira {

// Fills d.resources and d.resource_notes from the files (rows in d.rows' order and labels).
void fill_resources(ReportData& d, const std::vector<LoadedResults>& files);
// The table; no rows when no file recorded any of it.
ReportTable resources_table(const ReportData& d);

}  // namespace noeira
