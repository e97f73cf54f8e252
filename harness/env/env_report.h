// `noeira-bench env`'s work: this machine, this build and the GPU, and the baseline probe
// of both sides (harness/env/baseline_probe.h), as text or JSON.
#pragma once
#include <string>

namespace noeira {

struct EnvOptions {
  bool json = false, no_probe = false;
  int threads = 0;     // the probe's second row (0: all cores)
  std::string python;  // the twin's interpreter for its probe ("": the usual search)
};

// Prints the environment; returns the exit code.
int print_environment(const EnvOptions& o);

}  // namespace noeira
