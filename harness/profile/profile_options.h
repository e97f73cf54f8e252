// What `noeira-bench profile` is asked for (harness/cli/profile_command.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/trainer_factory.h"

namespace noeira {

struct ProfileOptions {
  std::string model = "gpt-tiny";
  std::string dtype = "fp32";
  std::string target = "auto";
  std::string variant;   // our variant; "" = eager (fp32) or bf16 (bf16)
  int64_t steps = 10;    // profiled steps
  int64_t warmup = 5;    // untimed steps first (the twin's compile among them)
  std::vector<std::string> twin = {"eager", "compiled"};  // or {"none"}
  std::string python;
  std::string trace_dir;  // "" = no traces
  std::string out;        // results JSON; "" = noeira-profile-<model>-<target>-<dtype>.json
  int threads = 0;
  double twin_timeout = 900;
  // --budget: each op's time at the GPU's peak (harness/profile/roofline.h); without a GPU
  // the shapes come from one CPU step and the part is budget_device (default H200).
  bool budget = false;
  std::string budget_device = "NVIDIA H200";
  DataOptions data;
  std::string command_line;
};

// Profiles ours and the twin's modes, prints the breakdown and writes the results file.
// An exit code (harness/exit_codes.h).
int run_profile(const ProfileOptions& o);

}  // namespace noeira
