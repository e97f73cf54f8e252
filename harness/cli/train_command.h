#pragma once
#include <CLI/CLI.hpp>

namespace noeira {

// `noeira-bench train`: trains one model, printing per-epoch loss and test top-1.
// Returns a function that runs the parsed command and gives its exit code.
std::function<int()> add_train_command(CLI::App& app);

}  // namespace noeira
