// Runs one of our variants for one seed: trains the recipe for a step budget, times
// every step after the warm-up with the host clock (and, on the GPU, CUPTI and CUDA
// events) until the stopping rule is satisfied, then evaluates on the test set.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/session.h"
#include "harness/stats.h"

namespace noeira {

struct VariantSpec {
  std::string name;  // "eager", "graph", ...
  bool graph = false;
  std::string dtype = "fp32";
};

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
Result<nlohmann::json> run_our_variant(const Recipe& recipe, const DataSplit& data,
                                       const VariantSpec& variant, uint64_t seed,
                                       const BenchSettings& settings, const std::string& label);

// A variants[] entry with no runs yet: available, no error (results/SCHEMA.md).
nlohmann::json new_variant(const std::string& name, const std::string& impl,
                           const std::string& dtype, const std::string& target);

// variants[].summary from its runs: timers pooled across seeds, seed statistics.
nlohmann::json summarize_runs(const nlohmann::json& runs);

}  // namespace noeira
