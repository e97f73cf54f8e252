// Runs one of our variants for one seed: trains the recipe for a step budget, times
// every step after the warm-up with the host clock (and, on the GPU, CUDA events) until
// the stopping rule is satisfied, then evaluates on the test set. CUPTI tracing slows the
// host side of every launch, so device (CUPTI) samples come from a second, traced pass
// over the same steps (add_device_samples), which also measures that slowdown.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/results/records.h"
#include "harness/run/stats.h"
#include "harness/run/variant.h"
#include "models/trainer_factory.h"

namespace noeira {

struct BenchSettings {
  Device device = Device::kCpu;
  int threads = 0;
  int64_t total_steps = 0;  // training steps per run
  int64_t warmup = 0;       // untimed steps first
  StoppingRule stop;
  // Steps per host-clock sample: 1 on the CPU (ops are synchronous); on the GPU a block
  // of steps between two synchronisations, so the clock does not stall the queue.
  int64_t wall_block = 1;
  // Time to target, memory and energy (harness/results/resource_records.h). The score
  // the recipe names ("test_top1" or "val_loss"; no metric: not measured), and the seconds
  // the process took to read the data once for every run (inside each run's time).
  std::string target_metric;
  double target_score = 0;
  double data_seconds = 0;
  // Energy per sample (classifiers) or token (the gpt family): units in one step.
  int64_t units_per_step = 0;
  std::string energy_unit = "sample";
};

// One element of variants[].runs (results/SCHEMA.md), or an Error when our run failed.
// Untraced: `device` is null and `cupti_overhead` null until add_device_samples.
Result<RunRecord> run_our_variant(const Recipe& recipe, const DataSplit& data,
                                  const Variant& variant, uint64_t seed,
                                  const BenchSettings& settings, const std::string& label);

// The traced pass of a GPU run made by run_our_variant: a fresh trainer of the same
// variant and seed with CUPTI on repeats the warm-up and the steps `run` timed, and fills
// run.timers.device and run.cupti_overhead. Call it after every untraced run of the
// process, so that no wall or event sample is taken after CUPTI was first enabled. An
// Error (CUPTI unavailable, say) leaves `run` as it was. No-op on the CPU.
Status add_device_samples(const Recipe& recipe, const DataSplit& data, const Variant& variant,
                          uint64_t seed, const BenchSettings& settings, const std::string& label,
                          RunRecord& run);

// Fills timers.device and cupti_overhead of every run of our variants (`ran`: the ones
// of `variants` we ran), then their summaries. A failed pass leaves the run's device
// timer null and says why on stderr.
void add_cupti_passes(const Recipe& recipe, const DataSplit& data, const std::vector<Variant>& ran,
                      const BenchSettings& st, std::vector<VariantRecord>& variants);

}  // namespace noeira
