// What a run used besides time (results/SCHEMA.md, "Memory, time to target, energy"):
// its peak memory, the wall time it took to reach the recipe's target score, and the
// energy of its timed steps. Three optional objects of runs[], both sides (ours and the
// twin's), typed here; their JSON is written and read in resource_records.cpp only, and
// validated there too (check_run_resources, called by results_validate.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"

namespace noeira {

// Peak memory of one run. Ours: the memory plan (bytes per category, what the arenas
// allocate once) and the process's resident-set peak over the run; on the GPU the device
// bytes in use (cudaMemGetInfo). The twin's: its process's resident-set peak (a fresh
// process per run) and, on the GPU, torch's allocator peaks.
struct MemoryRecord {
  std::map<std::string, int64_t> plan_bytes;  // ours: nn/memory_plan.h's categories by name
  std::optional<int64_t> plan_total_bytes;    // ours
  std::optional<int64_t> peak_rss_bytes;      // null: unreadable here
  std::string rss_method;                     // how peak_rss_bytes was taken
  std::optional<int64_t> device_bytes_in_use;  // ours, GPU: total - free at the end of the run
  std::optional<int64_t> device_bytes_run;     // ours, GPU: what the run added to it
  std::optional<int64_t> torch_max_allocated_bytes, torch_max_reserved_bytes;  // the twin, GPU
  std::string note;  // "" or what could not be measured, and why
};

// The wall time from the first touch of the data to the end of the first evaluation
// whose score reached the recipe's target (MLPerf's time to train: evaluations included).
struct TimeToTargetRecord {
  std::string metric;  // "test_top1" (percent, higher is better) | "val_loss" (lower is better)
  double target = 0;
  bool reached = false;
  std::optional<double> seconds;  // null when not reached
  std::optional<int64_t> step;    // steps done at the evaluation that reached it
  std::optional<double> score;    // that evaluation's score
  int64_t evaluations = 0;        // evaluations made until it was reached (or the run's end)
  int64_t steps = 0;              // the run's steps
  std::optional<double> data_seconds;  // ours: the process's one read of the data, inside `seconds`
};

// Energy over the timed steps (evaluations excluded): NVML's total-energy counter on an
// NVIDIA GPU, RAPL's package counters on a CPU; or why there is none.
struct EnergyRecord {
  bool available = false;
  std::string source;  // "nvml" | "rapl" ("" when unavailable)
  std::string why;     // when unavailable
  std::string scope;   // what the counter covers ("GPU board", "CPU package 0 (every process on it)")
  std::optional<double> joules;
  int64_t steps = 0;  // timed steps the reading covers
  std::optional<double> joules_per_step, joules_per_unit;
  std::string unit;  // "sample" | "token"
};

// Energy from two counter readings over `steps` steps of `units_per_step` samples or tokens.
EnergyRecord energy_record(const std::string& source, const std::string& scope, double joules,
                           int64_t steps, int64_t units_per_step, const std::string& unit);
EnergyRecord energy_unavailable(const std::string& why);

nlohmann::json memory_json(const MemoryRecord& m);
nlohmann::json time_to_target_json(const TimeToTargetRecord& t);
nlohmann::json energy_json(const EnergyRecord& e);
// Lenient readers (a validated file, or the twin's reply): a field of another type reads
// as absent; an object that lacks what it must have reads as nothing.
std::optional<MemoryRecord> memory_from(const nlohmann::json& j);
std::optional<TimeToTargetRecord> time_to_target_from(const nlohmann::json& j);
std::optional<EnergyRecord> energy_from(const nlohmann::json& j);

// The optional runs[] objects `memory`, `time_to_target` and `energy`, when present, have
// their keys' types (results_validate.cpp calls it for every run).
Status check_run_resources(const nlohmann::json& run, const std::string& path);

// ---- Over a variant's runs (what the run table and the report show) ----

struct VariantRecord;  // harness/results/records.h

struct VariantResources {
  std::optional<int64_t> plan_total_bytes, peak_rss_bytes, device_bytes;  // max over runs
  std::string device_bytes_what;  // "in use" (ours) | "torch max allocated" (the twin)
  std::string rss_method;         // the first run's
  // Time to target: the median over the runs that reached it, and how many did.
  std::optional<double> ttt_seconds;
  int64_t ttt_reached = 0, ttt_runs = 0, ttt_steps = 0;  // steps: the longest run's
  std::optional<double> ttt_target;
  std::string ttt_metric;
  // Energy: the mean over the runs that have a reading.
  std::optional<double> joules_per_step, joules_per_unit;
  std::string energy_unit, energy_source, energy_why;
};

// Over the variant's runs (empty for a variant without runs or an older file).
VariantResources variant_resources(const VariantRecord& v);

// "1.23 GiB", "512.0 MiB", "-".
std::string format_bytes(const std::optional<int64_t>& bytes);
// "12.3 s (3/3)", "not reached in 200 steps", "4.5 s (2/3; 1 not reached in 200 steps)", "-".
std::string ttt_text(const VariantResources& r);
// "0.123 J/step", "n/a" (with no reading).
std::string energy_text(const VariantResources& r);

}  // namespace noeira
