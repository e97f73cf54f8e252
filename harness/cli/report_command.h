#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace noeira {

// `noeira-bench report RESULTS.json... [--md FILE] [--html FILE]`: prints the comparison
// tables as markdown, and writes them (atomically) as markdown and/or a self-contained
// HTML page. Exit 2 when any input file is unusable. Returns a function that runs the
// parsed command and gives its exit code (kNotThisCommand when this subcommand was not given).
std::function<int()> add_report_command(CLI::App& app);

}  // namespace noeira
