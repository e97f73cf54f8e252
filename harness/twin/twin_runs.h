// Runs the twin's modes over the seeds and turns its JSON into results variants.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "datasets/data_files.h"
#include "harness/results/records.h"
#include "harness/twin/twin.h"

namespace noeira {

struct TwinPlan {
  std::string python;        // empty: no usable python (reason below)
  std::string unavailable;   // why the twin cannot run at all
  std::filesystem::path recipe, data_dir, log_dir;
  std::string dataset, device, dtype, target;
  std::vector<uint64_t> seeds;
  int epochs = 1;
  int64_t total_steps = 0, warmup = 0;
  int threads = 0;
  double timeout_seconds = 900;
};

// The variant "twin:<mode>" without runs, every seed of the plan pending.
VariantRecord plan_twin_mode(const TwinPlan& plan, const std::string& mode);

// Runs the planned variant's pending seeds (one twin process each), recording each
// finished seed and calling `after_seed` (the run saves its results file there). An
// interrupt (harness/run/interrupt.h) stops the twin and leaves the rest pending.
void run_twin_mode(const TwinPlan& plan, const std::string& mode, VariantRecord& variant,
                   const std::function<void()>& after_seed = {});

// Where the twin finds <dataset>/<files> (its --data-dir): the directory above our
// located copy of the data set, else the data directory or cache we would download into.
std::filesystem::path twin_data_dir(const std::string& dataset, const DataSource& src);

// One element of runs[] from the twin's reply.
RunRecord twin_run(const TwinReply& reply, uint64_t seed);

}  // namespace noeira
