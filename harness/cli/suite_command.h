// `noeira-bench suite`: every model's variant matrix, one `run` each (a child process, so
// one model's failure or crash is a row with its reason and the rest go on), then one
// report whose first table is the published comparison (harness/report/report_summary.h).
//
// The suite directory holds suite.json (the manifest: options and every entry's status,
// rewritten atomically after each entry), one results JSON per entry, logs/ and the
// report (report.md, report.html). An interrupted suite keeps every finished entry;
// `suite --resume DIR` runs what is not done and writes the report again.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace noeira {

std::function<int()> add_suite_command(CLI::App& app);

}  // namespace noeira
