// The noeira-bench command line: one CLI11 app, one file per subcommand.
#pragma once

namespace noeira {

// Exit codes: 0 success, 1 the work failed (bad data, failed run), 2 unusable input
// (bad arguments, unreadable files given on the command line).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

int run_cli(int argc, char** argv);

}  // namespace noeira
