// `noeira-bench report`'s work: results files in, the report out (markdown on stdout, and
// as files: markdown and a self-contained HTML page).
#pragma once
#include <string>
#include <vector>

namespace noeira {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string md_path, html_path;  // "" = not written
};

// Returns the exit code: kExitUsage when an input file is unusable.
int run_report(const ReportOptions& o);

}  // namespace noeira
