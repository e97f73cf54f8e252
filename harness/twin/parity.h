// Parity mode: the twin starts from our step-0 weights (our checkpoint file) and draws
// our Philox batches, so the two loss curves can be compared step by step.
#pragma once
#include <string>

#include "harness/results/records.h"
#include "harness/run/bench_runner.h"
#include "harness/twin/twin_runs.h"

namespace noeira {

struct ParityOutcome {
  Nullable<ParityRecord> record;  // benchmarks[].parity, or null when it could not run
  std::string note;               // why it could not run
};

// The line `run` prints for a parity result (benchmarks[].parity).
std::string parity_line(const ParityRecord& p);

// The bound is the recipe's parity.bound (max relative deviation, fp32), and
// parity.early_bound over its first parity.early_steps steps where the recipe sets them.
ParityOutcome run_parity(const Recipe& recipe, const DataSplit& data, const BenchSettings& st,
                         uint64_t seed, const TwinPlan& twin, int64_t steps);

}  // namespace noeira
