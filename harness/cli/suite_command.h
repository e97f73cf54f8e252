// `noeira-bench suite`: its options (the work: harness/suite/suite_runner.h).
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace noeira {

std::function<int()> add_suite_command(CLI::App& app);

}  // namespace noeira
