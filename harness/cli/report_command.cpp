#include "harness/cli/report_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/report/report_files.h"

namespace noeira {

std::function<int()> add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Markdown/HTML comparison tables and charts from one or more results files");
  cmd->add_option("RESULTS", o->inputs, "Results JSON files")->required();
  cmd->add_option("--md", o->md_path, "Also write the markdown to this file");
  cmd->add_option("--html", o->html_path,
                  "Write a self-contained HTML page (environment, tables, ratio and memory "
                  "charts, step-time bars, loss curves)");
  cmd->add_flag("--allow-dirty", o->allow_dirty,
                "Write --md/--html into the repository's results/ even from a dirty tree "
                "(uncommitted changes); the report then says so. Without it that is refused (exit 2)");
  return [cmd, o]() { return cmd->parsed() ? run_report(*o) : kNotThisCommand; };
}

}  // namespace noeira
