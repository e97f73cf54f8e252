// `noeira-bench suite`'s work: every model's variant matrix, one `run` each (a child process,
// so one model's failure or crash is a row with its reason and the rest go on), then one
// report whose first table is the published comparison (harness/report/report_summary.h).
//
// The suite directory holds suite.json (the manifest: options and every entry's status,
// rewritten atomically after each entry), one results JSON per entry, logs/ and the
// report (report.md, report.html). An interrupted suite keeps every finished entry;
// `suite --resume DIR` runs what is not done and writes the report again.
#pragma once
#include "harness/suite/suite_manifest.h"

namespace noeira {

// Runs (or with options.resume, finishes) a suite; returns the exit code: kExitFailure
// when an entry failed, 128 + the signal when interrupted.
int run_suite(const SuiteOptions& options);

}  // namespace noeira
