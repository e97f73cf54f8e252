// The noeira-bench command line: one CLI11 app, one file per subcommand.
#pragma once
#include "harness/exit_codes.h"

namespace noeira {

// What a subcommand's function returns when its subcommand was not the one given (not an
// exit code: run_cli asks the next one).
inline constexpr int kNotThisCommand = -1;

int run_cli(int argc, char** argv);

}  // namespace noeira
