// The options of `noeira-bench run` and the variant matrix they describe.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/trainer_factory.h"

namespace noeira {

struct RunOptions {
  std::string model = "mlp";
  std::string dtype = "fp32";
  std::string target = "auto";
  std::vector<std::string> variants;  // empty = every variant the target supports
  int seeds = 3;
  std::vector<uint64_t> seed_list;
  int64_t steps = 0;  // 0 = the recipe's full training
  int64_t warmup = -1;
  std::vector<std::string> twin = {"eager", "compiled", "graphs"};
  std::string python;
  std::string out;
  bool quick = false;
  bool parity = false;
  int threads = 0;
  DataOptions data;
  int64_t min_samples = 100;
  double max_noise = 0.02;
  double max_seconds = 60.0;
  double twin_timeout = 900.0;
  std::string command_line;
  // interleaved (ours and the twin's alternate seed by seed) | blocked (harness/run/run_order.h)
  std::string order = "interleaved";
  std::vector<int> ranks_list;  // the scaling benchmark (harness/run/scaling_runner.h)
  std::vector<int> zero_list = {0};
};

// Runs our variants and the twin's modes over the seeds, in `order` (and parity when asked), writes
// the results file after every finished seed (harness/results/partial_results.h), prints the
// comparison table. Returns the process exit code: 128 + the signal when interrupted.
int run_matrix(const RunOptions& o);

}  // namespace noeira
