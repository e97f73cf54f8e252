#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace noeira {

// `noeira-bench profile`: where each step's time goes, ours beside the twin's, by op
// category and by op (harness/profile/).
std::function<int()> add_profile_command(CLI::App& app, const std::string& command_line);

}  // namespace noeira
