// The data-parallel scaling benchmark (`noeira-bench --model gpt-tiny --ranks-list 1,2,4
// --zero 0,1`): for every rank count N and ZeRO stage, one training run started the way a
// user starts it (one process for N = 1, `mpirun -np N` otherwise), each writing its summary
// (`train --timing-json`: every rank's median step time, tokens/s, collective bytes per
// step, parameter/gradient/optimizer bytes per rank); then the twin's DDP / ZeRO-1 on the
// same configuration where the installed torch can. Prints one table and writes a results
// JSON (results/SCHEMA.md, "scaling").
#pragma once
#include <string>
#include <vector>

#include "models/trainer_factory.h"

namespace noeira {

struct ScalingOptions {
  std::string model = "gpt-tiny";
  std::vector<int> ranks = {1, 2};
  std::vector<int> zero = {0};
  int64_t steps = 30;        // per run (the first 3 are not timed)
  int threads_per_rank = 1;
  uint64_t seed = 0;
  bool twin = true;
  std::string python;        // the twin's interpreter (default: the usual search)
  std::string out;           // results JSON (default noeira-scaling-<model>.json)
  DataOptions data;
  double timeout_seconds = 900;
};

int run_scaling(const ScalingOptions& o);

}  // namespace noeira
