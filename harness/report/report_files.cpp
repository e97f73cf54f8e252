#include "harness/report/report_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "harness/cli/cli_options.h"
#include "harness/env/publish_guard.h"
#include "harness/exit_codes.h"
#include "harness/report/report_data.h"
#include "harness/report/report_html.h"
#include "harness/report/report_markdown.h"
#include "harness/results/results.h"
#include "nn/atomic_file.h"

namespace noeira {

int run_report(const ReportOptions& o) {
  std::vector<LoadedResults> files;
  for (const std::string& path : o.inputs) {
    Result<ResultsRecord> r = read_results_record(path);
    if (!r) return report_error(r.error().message, kExitUsage);
    files.push_back({path, std::move(r).value()});
  }
  // Into the repository's results/: not from a dirty tree, unless --allow-dirty.
  std::vector<std::string> publish_warnings;
  for (const std::string& out : {o.md_path, o.html_path}) {
    if (out.empty()) continue;
    Result<std::vector<std::string>> guard =
        guard_publish(std::filesystem::absolute(out).parent_path(), o.allow_dirty);
    if (!guard) return report_error(guard.error().message, kExitUsage);
    for (const std::string& w : *guard)
      if (std::find(publish_warnings.begin(), publish_warnings.end(), w) == publish_warnings.end())
        publish_warnings.push_back(w);
  }
  ReportData data = build_report_data(files);
  data.publish_warnings = publish_warnings;
  const std::string markdown = render_markdown(data);
  std::fwrite(markdown.data(), 1, markdown.size(), stdout);
  std::fflush(stdout);  // before any note on stderr, so the two never interleave
  if (!o.md_path.empty()) {
    if (Status s = write_file_atomically(o.md_path, markdown, "markdown report"); !s)
      return report_error(s.error().message, kExitFailure);
    std::fprintf(stderr, "wrote %s\n", o.md_path.c_str());
  }
  if (!o.html_path.empty()) {
    if (Status s = write_file_atomically(o.html_path, render_html(data), "HTML report"); !s)
      return report_error(s.error().message, kExitFailure);
    std::fprintf(stderr, "wrote %s\n", o.html_path.c_str());
  }
  return kExitOk;
}

}  // namespace noeira
