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
  // Time to target (harness/results/resource_records.h): "test_top1" | "val_loss", or ""
  // (not measured), and the score.
  std::string target_metric;
  double target_score = 0;

  // One twin process of this plan: `mode`, `seed`, its log `log_name` in log_dir; every
  // other field from the plan (the caller may override any).
  TwinRequest request(const std::string& mode, uint64_t seed, const std::string& log_name) const;
};

// --twin's list: eager, compiled, graphs (in the order given), "none" dropped; an Error
// naming an unknown mode.
Result<std::vector<std::string>> parse_twin_modes(const std::vector<std::string>& requested);

// The results' context.twin block from the interpreter probe (`requested`: --python).
TwinContext twin_context(const PythonProbe& probe, const std::string& requested);

// The variant "twin:<mode>" without runs, every seed of the plan pending.
VariantRecord plan_twin_mode(const TwinPlan& plan, const std::string& mode);

// What became of one seed of a twin mode.
enum class TwinSeedOutcome {
  kRecorded,     // the run is in variant.runs
  kVariantDone,  // the mode failed or is unavailable here: variant.error / unavailable_reason
                 // say why, its other seeds are no longer pending
  kStopped,      // an interrupt (harness/run/interrupt.h): this seed stays pending
};

// Runs one seed of a planned twin mode in its own twin process (so its compile time and
// its peak are its own), and records it. Does nothing (kVariantDone) for a variant that
// is already unavailable or failed. `sequence` is the run's place in the run order.
TwinSeedOutcome run_twin_seed(const TwinPlan& plan, const std::string& mode, uint64_t seed,
                              VariantRecord& variant, int64_t sequence);

// Where the twin finds <dataset>/<files> (its --data-dir): the directory above our
// located copy of the data set, else the data directory or cache we would download into.
std::filesystem::path twin_data_dir(const std::string& dataset, const DataSource& src);

// One element of runs[] from the twin's reply.
RunRecord twin_run(const TwinReply& reply, uint64_t seed);

}  // namespace noeira
