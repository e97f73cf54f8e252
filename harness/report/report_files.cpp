#include "harness/report/report_files.h"

#include <cstdio>

#include "harness/cli/cli_options.h"
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
  const ReportData data = build_report_data(files);
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
