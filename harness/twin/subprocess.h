// Runs a child process with a time limit: its stdout is captured, its stderr appended to
// a log file, and it is killed (with its process group) when the limit passes. The child
// leads its own process group and dies with this process (even a kill -9 of it), so no
// run is left behind; on an interrupt (harness/run/interrupt.h) it is sent SIGINT, then
// SIGKILL if it has not ended within `grace_seconds`.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace noeira {

struct ProcessResult {
  bool started = false;   // false: could not be spawned (see error)
  bool timed_out = false;
  int exit_code = -1;     // -1 when killed by a signal
  int signal = 0;         // the signal that ended it, if any
  bool interrupted = false;  // stopped because this process was interrupted
  std::string out;        // everything it wrote on stdout
  std::string error;      // why it could not be spawned
  double seconds = 0.0;
};

// `extra_env` ("NAME=value") is added to (and overrides) this process's environment.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& stderr_log, double timeout_seconds,
                          const std::vector<std::string>& extra_env = {},
                          double grace_seconds = 10.0);

// This binary's path (/proc/self/exe), for the commands that run it as a child; else
// "noeira-bench" (found on PATH).
std::string self_binary();

}  // namespace noeira
