// The baseline probes (harness/env/baseline_probe.h) over a report's files, for its
// environment block: one row per side and thread count, each figure the median over the
// files that measured it, with its range when the files differ; the sides' math
// libraries; a failed probe with the files it failed in.
#pragma once
#include "harness/report/report_data.h"
#include "harness/report/report_tables.h"

namespace noeira {

// No rows when no file has probes (files written before schema version 2).
ReportTable probe_table(const ReportData& d);

}  // namespace noeira
