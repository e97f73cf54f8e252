// Runs one of our variants for one seed: trains the recipe for a step budget, times
// every step after the warm-up with the host clock (and, on the GPU, CUDA events) until
// the stopping rule is satisfied, then evaluates on the test set. CUPTI tracing slows the
// host side of every launch, so device (CUPTI) samples come from a second, traced pass
// over the same steps (add_device_samples), which also measures that slowdown.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/trainer_factory.h"
#include "harness/run/stats.h"
#include "harness/run/variant.h"

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
};

// {samples_ms, median_ms, q1_ms, q3_ms, cv, n}, or null for no samples.
nlohmann::json timer_json(const std::vector<double>& samples_ms);

// One element of variants[].runs (results/SCHEMA.md), or an Error when our run failed.
// Untraced: `device` is null and `cupti_overhead` null until add_device_samples.
Result<nlohmann::json> run_our_variant(const Recipe& recipe, const DataSplit& data,
                                       const Variant& variant, uint64_t seed,
                                       const BenchSettings& settings, const std::string& label);

// The traced pass of a GPU run made by run_our_variant: a fresh trainer of the same
// variant and seed with CUPTI on repeats the warm-up and the steps `run` timed, and fills
// run.timers.device and run.cupti_overhead. Call it after every untraced run of the
// process, so that no wall or event sample is taken after CUPTI was first enabled. An
// Error (CUPTI unavailable, say) leaves `run` as it was. No-op on the CPU.
Status add_device_samples(const Recipe& recipe, const DataSplit& data,
                          const Variant& variant, uint64_t seed,
                          const BenchSettings& settings, const std::string& label,
                          nlohmann::json& run);

// runs[].cupti_overhead: host ms/step with CUPTI tracing on (the traced pass) against
// off (the run's wall samples): {wall_on_ms, wall_off_ms, ratio, samples_on_ms}; null
// without samples on either side.
nlohmann::json cupti_overhead_json(const std::vector<double>& wall_on_ms,
                                   const std::vector<double>& wall_off_ms);

// A variants[] entry with no runs yet: available, no error, an empty summary
// (results/SCHEMA.md).
nlohmann::json new_variant(const std::string& name, const std::string& impl,
                           const std::string& dtype, const std::string& target);

// A variants[] entry for one of our variants that cannot run here (`why`), summarised.
nlohmann::json unavailable_variant(const std::string& name, const std::string& dtype,
                                   const std::string& target, const std::string& why);

// Fills timers.device and cupti_overhead of every run of our variants (`ran`: the specs
// of the entries of `variants` we ran), then their summaries. A failed pass leaves the
// run's device timer null and says why on stderr.
void add_cupti_passes(const Recipe& recipe, const DataSplit& data,
                      const std::vector<Variant>& ran, const BenchSettings& st,
                      nlohmann::json& variants);

// variants[].summary from its runs: timers pooled across seeds, seed statistics, and the
// CUPTI overhead over the pooled samples (null where no run has one).
nlohmann::json summarize_runs(const nlohmann::json& runs);

}  // namespace noeira
