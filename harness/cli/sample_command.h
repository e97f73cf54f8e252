#pragma once
#include <CLI/CLI.hpp>

namespace noeira {

// `noeira-bench sample`: text from a gpt-family checkpoint (nanoGPT's sample.py).
// Returns a function that runs the parsed command and gives its exit code.
std::function<int()> add_sample_command(CLI::App& app);

}  // namespace noeira
