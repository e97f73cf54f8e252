// `noeira-bench report`'s work: results files in, the report out (markdown on stdout, and
// as files: markdown and a self-contained HTML page).
#pragma once
#include <string>
#include <vector>

namespace noeira {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string md_path, html_path;  // "" = not written
  bool allow_dirty = false;        // write into the repository's results/ from a dirty tree anyway
};

// Returns the exit code: kExitUsage when an input file is unusable, or when --md/--html
// point into the repository's results/ from a dirty tree without allow_dirty
// (harness/env/publish_guard.h).
int run_report(const ReportOptions& o);

}  // namespace noeira
