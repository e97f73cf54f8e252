// The report's environment block, once at its top (markdown and HTML): the environment
// fields of the results files (harness/report/report_context.h) that every file shares,
// shown once; a per-file table of only the fields that differ (none when none do); the
// warnings, a dirty tree's first; and the baseline probes over the files.
#pragma once
#include <string>
#include <vector>

#include "harness/report/report_data.h"
#include "harness/report/report_tables.h"

namespace noeira {

struct EnvironmentBlock {
  std::string files;              // "results/x/a.json, created ..." or "7 results files in results/x/ (...)"
  std::vector<EnvField> shared;   // the same in every file, in block order
  // "file" then each differing field, one row per file; no rows when nothing differs or
  // there is one file. `same_note` then says so (more than one file).
  ReportTable per_file;
  std::string same_note;
  // "built from a dirty tree (uncommitted changes) ..." when a file's binary was, and what
  // --allow-dirty let through (ReportData::publish_warnings).
  std::vector<std::string> dirty;
  // The files' context warnings, each once; prefixed with the files that have it when not
  // every file does.
  std::vector<std::string> warnings;
  ReportTable probes;  // harness/report/report_probes.h; no rows without probes
};

EnvironmentBlock environment_block(const ReportData& d);

}  // namespace noeira
