// Runs a child process with a time limit: its stdout is captured, its stderr appended to
// a log file, and it is killed (with its process group) when the limit passes.
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
  std::string out;        // everything it wrote on stdout
  std::string error;      // why it could not be spawned
  double seconds = 0.0;
};

// `extra_env` ("NAME=value") is added to (and overrides) this process's environment.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& stderr_log, double timeout_seconds,
                          const std::vector<std::string>& extra_env = {});

}  // namespace noeira
