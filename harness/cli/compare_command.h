#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace noeira {

// `noeira-bench compare BASE.json NEW.json`: the regression gate. Exit 0 when nothing
// got significantly slower (beyond --max-slowdown) and no accuracy regressed, 1 when
// something did, 2 on unusable input. Returns a function that runs the parsed command
// and gives its exit code (kNotThisCommand when this subcommand was not the one given).
std::function<int()> add_compare_command(CLI::App& app);

}  // namespace noeira
