// `noeira-bench micro`: its options (the benchmarks: harness/micro/micro_benchmarks.h).
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace noeira {

// Returns a function that runs the parsed command and gives its exit code (kNotThisCommand
// when the subcommand was not given): 0, or 2 for unrecognized Google Benchmark flags.
std::function<int()> add_micro_command(CLI::App& app);

}  // namespace noeira
