// The exit codes of noeira-bench, one place for every command (README, `--help`'s footer,
// results/SCHEMA.md "Partial files").
#pragma once

namespace noeira {

// Done (compare: nothing regressed).
inline constexpr int kExitOk = 0;
// The work failed: bad data, a failed run, a parity failure; compare found a regression.
inline constexpr int kExitFailure = 1;
// Unusable input: bad arguments, files given on the command line unreadable or invalid;
// writing into the repository's results/ from a dirty tree without --allow-dirty
// (harness/env/publish_guard.h).
inline constexpr int kExitUsage = 2;
// Stopped by a signal: 128 + its number, as a shell reports a process the signal ended
// (130 for Ctrl-C), so scripts read a clean stop the same way.
inline constexpr int kExitSignalBase = 128;
constexpr int exit_code_for_signal(int signal) { return kExitSignalBase + signal; }
// A forked child that could not exec its program (the shell's "command not found").
inline constexpr int kExitExecFailed = 127;

}  // namespace noeira
