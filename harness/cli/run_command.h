#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace noeira {

// `noeira-bench run` (also the default: `noeira-bench --model mlp`): the variant matrix
// over seeds, the PyTorch twin, the comparison table and the results JSON.
std::function<int()> add_run_command(CLI::App& app, const std::string& command_line);

}  // namespace noeira
