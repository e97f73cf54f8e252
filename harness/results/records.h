// The results file as typed records (results/SCHEMA.md): what `run` and the twin's runs
// fill in, what report, compare, suite and the run table read. They are converted to and
// from JSON in results/records_json.cpp (the measurements) and results/context_json.cpp
// (the file's frame) and nowhere else, as Google Benchmark keeps its Run apart from its
// reporters: each key and its type are written once, and the JSON written is the
// schema's, key for key.
//
// Readers take records from a validated file (results/results.h: read_results_record):
// what the validation checks is read as is; the rest (fields the schema makes optional
// and leaves unchecked) is read leniently, a value of another type reading as absent.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/env/cpu_load.h"
#include "harness/env/gpu_clocks.h"
#include "harness/results/profile_records.h"
#include "harness/results/resource_records.h"

namespace noeira {

// Two kinds of optional field, both std::optional: a Nullable key is always written (null
// when empty); an Optional key is written only when set. Optional<Nullable<T>> is a key
// that may be absent, null or a value.
template <class T>
using Nullable = std::optional<T>;
template <class T>
using Optional = std::optional<T>;

// A measured number as the schema holds it: NaN and infinities, which JSON cannot hold,
// are null.
inline Nullable<double> finite_or_null(double v) {
  return std::isfinite(v) ? Nullable<double>(v) : std::nullopt;
}

// ---- Timers ----

enum class TimerKind { kWall, kDevice, kEvent };
// Most precise first: the order in which "auto" picks one.
inline constexpr std::array<TimerKind, 3> kTimersByPreference = {TimerKind::kDevice,
                                                                 TimerKind::kEvent, TimerKind::kWall};
const char* timer_name(TimerKind t);  // "wall", "device", "event"
std::optional<TimerKind> parse_timer(std::string_view name);

// A timer's statistics over its samples (ms per step).
struct TimerStats {
  double median_ms = 0, q1_ms = 0, q3_ms = 0;
  Nullable<double> cv;
  int64_t n = 0;
};

// A run's timer: its samples and their statistics.
struct TimerRecord {
  std::vector<double> samples_ms;
  TimerStats stats;
  Optional<std::vector<double>> sum_samples_ms;  // device (CUPTI): the activities' sum per step
};

// wall, device, event: each measured (a value) or not (null).
template <class T>
struct TimerSet {
  Nullable<T> wall, device, event;
  Nullable<T>& operator[](TimerKind t) { return t == TimerKind::kWall ? wall : t == TimerKind::kDevice ? device : event; }
  const Nullable<T>& operator[](TimerKind t) const {
    return t == TimerKind::kWall ? wall : t == TimerKind::kDevice ? device : event;
  }
};

// What CUPTI tracing costs on the host clock: traced pass vs untraced run.
struct CuptiOverheadStats {
  double wall_on_ms = 0, wall_off_ms = 0;
  Nullable<double> ratio;
};
struct CuptiOverhead {
  CuptiOverheadStats stats;
  std::vector<double> samples_on_ms;  // the traced pass's host-clock samples
};

// ---- Runs (one seed) ----

// How the twin ran a step (reference/twin), each as far as it said.
struct TwinImpl {
  Optional<std::string> torch_version, adam_impl, attention_impl, compile_impl;
  Optional<int64_t> compiled_graphs, graph_breaks;
};

struct RunRecord {
  uint64_t seed = 0;
  TimerSet<TimerRecord> timers;
  Nullable<double> test_top1, test_loss, train_loss;
  std::vector<Nullable<double>> losses;  // every step's; null: a NaN loss
  int64_t steps = 0;
  // Ours: null until the traced pass fills it (absent in the twin's runs, older files).
  Optional<Nullable<CuptiOverhead>> cupti_overhead;
  Optional<double> planned_flops_per_step;  // ours: 3 x the planned forward FLOPs x batch
  Optional<std::string> note;               // ours: why a graph variant ran eagerly
  Optional<Nullable<double>> compile_seconds;  // the twin's: torch.compile, null in eager
  Optional<TwinImpl> twin_impl;                // the twin's
  // Run order and machine load (results/SCHEMA.md, docs/measurement.md): this run's
  // 0-based position in the order the invocation ran its runs, and steal time and load
  // average over its measured window (absent in older files).
  Optional<int64_t> sequence;
  Optional<CpuLoadWindow> cpu_load;
  // Peak memory, time to the recipe's target, energy of the timed steps (both sides;
  // harness/results/resource_records.h; absent in older files).
  Optional<MemoryRecord> memory;
  Optional<TimeToTargetRecord> time_to_target;
  Optional<EnergyRecord> energy;
};

// ---- Variants ----

// A run's test score.
enum class SeedScore { kTestTop1, kTestLoss };

// A score over seeds (test top-1 or test loss).
struct ScoreStats {
  Nullable<double> mean, std;
  int64_t n = 0;
  Nullable<double> olympic_mean;
};

// Pooled over a variant's seeds.
struct VariantSummary {
  TimerSet<TimerStats> timers;
  Nullable<CuptiOverheadStats> cupti_overhead;
  Nullable<ScoreStats> test_top1, test_loss;
};

struct VariantRecord {
  std::string name;    // eager, graph, bf16, bf16+graph, host-batch; twin:<mode>
  std::string impl;    // "noeira" | "torch"
  std::string dtype;   // "fp32" | "bf16"
  std::string target;  // "cpu" | "gpu"
  bool available = true;
  Nullable<std::string> unavailable_reason, error;
  std::vector<RunRecord> runs;
  VariantSummary summary;
  Optional<std::vector<uint64_t>> pending_seeds;  // planned, not finished (harness/results/partial_results.h)
  Optional<VariantClocks> clocks;                 // GPU only (harness/env/gpu_clocks.h)

  bool twin() const { return impl == "torch"; }
  // Ran: available, no error, and started (not a stopped run's variant whose seeds are
  // all pending).
  bool ran() const;
  // Every run's samples of `t`, pooled across seeds (empty when none).
  std::vector<double> pooled_samples(TimerKind t) const;
  // The first timer in kTimersByPreference with a summary, or nothing.
  std::optional<TimerKind> best_timer() const;
  // The non-null runs[].test_top1 or .test_loss, one per seed.
  std::vector<double> seed_scores(SeedScore score) const;
};

// ---- Benchmarks (one model) ----

// Step-by-step loss agreement with the twin from the same weights and batches.
struct ParityRecord {
  int64_t steps = 0;
  Nullable<double> max_rel_dev;  // non-finite: null
  double bound = 0;
  bool passed = false;
  std::vector<Nullable<double>> ours, twin;
  // The recipe's tighter bound over its first steps, where it sets one.
  struct Early {
    int64_t steps = 0;
    Nullable<double> max_rel_dev;
    double bound = 0;
  };
  Optional<Early> early;
};

// Whether our and the twin's per-seed test losses agree.
struct SeedAgreementRecord {
  std::string test, note;
  double statistic = 0, p_value = 1;
  bool agree = true;
};

// A known GPU's dense peak FLOP/s, for the MFU column.
struct PeakFlops {
  Optional<double> fp32, bf16;  // fp32: the rate fp32 runs had (fp32_basis)
  std::string device;
  std::string fp32_basis = "fp32";  // "tf32" (tensor cores, NOEIRA_TF32 on) or "fp32"
  Optional<double> for_dtype(const std::string& dtype) const { return dtype == "bf16" ? bf16 : fp32; }
};

struct BenchmarkRecord {
  std::string model, dataset;
  nlohmann::json recipe = nlohmann::json::object();  // the recipe file as used (its own schema)
  std::string recipe_hash;
  std::vector<VariantRecord> variants;
  Nullable<ParityRecord> parity;
  Nullable<SeedAgreementRecord> seed_agreement;
  Optional<int64_t> tokens_per_step;  // a family whose FLOPs are counted per token
  Optional<double> flops_per_step;
  Optional<PeakFlops> peak_flops;
  // noeira-bench profile: where the step's time goes, ours and the twin's.
  Optional<ProfileRecord> profile;

  const VariantRecord* variant(std::string_view name) const;
  VariantRecord* variant(std::string_view name);
};

// ---- The file ----

// context.host, .build, .device: what readers use, typed; `recorded` keeps every key as
// host_info(), build_info() and device_info() wrote it (the schema allows more), and is
// what is written.
struct HostRecord {
  std::string cpu_model, os;
  int64_t cores = 0;
  nlohmann::json recorded = nlohmann::json::object();
};
struct BuildRecord {
  std::string git_sha;  // the source tree the binary was built from ("" when unknown)
  bool git_dirty = false;
  bool has_openblas = false;  // older builds linked OpenBLAS for the fp32 GEMMs
  std::string openblas_core;
  bool has_onednn = false;
  std::string onednn_version, onednn_isa;  // "" when unrecorded
  nlohmann::json recorded = nlohmann::json::object();
};
struct DeviceRecord {
  bool available = false;
  std::string name, reason;          // "" when absent
  std::string sm, driver, runtime;   // as text ("90", "12040"), "" when unrecorded
  nlohmann::json recorded = nlohmann::json::object();
};

struct TwinContext {
  std::string python;
  Nullable<std::string> torch_version;
  bool available = false;
  Nullable<std::string> reason;
};

struct ContextRecord {
  std::string command_line, git_sha;
  bool git_dirty = false;
  HostRecord host;
  BuildRecord build;
  DeviceRecord device;
  TwinContext twin;
  // The baseline probes (harness/env/baseline_probe.h owns this object's shape).
  Optional<nlohmann::json> probes;
  Optional<std::vector<std::string>> warnings;
  // "interleaved" (ours and the twin's alternate seed by seed) | "blocked" (every seed of
  // one variant, then the next); absent in older files (blocked).
  Optional<std::string> run_order;
};

struct StoppingRecord {
  int64_t min_samples = 0;
  double max_rel_noise = 0, max_seconds = 0;
};

struct ConfigRecord {
  std::string target, dtype;
  std::vector<uint64_t> seeds;
  int64_t steps = 0, warmup = 0, threads = 0;
  bool quick = false;
  StoppingRecord stopping;
};

struct ResultsRecord {
  int64_t schema_version = 0;
  std::string tool, tool_version, created_utc;
  ContextRecord context;
  ConfigRecord config;
  std::vector<BenchmarkRecord> benchmarks;
  Optional<std::string> status;                // "complete" | "partial"; absent: complete
  Optional<Nullable<std::string>> stopped_by;  // the signal that stopped a partial run

  // A stopped run's file (status "partial").
  bool partial() const { return status && *status == "partial"; }
  // What the numbers were measured on: "gpu <device name>" or "cpu <cpu model>".
  std::string measured_on() const;
};

// Read from what host_info(), build_info() and device_info() return.
HostRecord host_record(const nlohmann::json& host);
BuildRecord build_record(const nlohmann::json& build);
DeviceRecord device_record(const nlohmann::json& device);

// JSON conversion (nlohmann's to_json/from_json, found by argument-dependent lookup, so
// `nlohmann::json j = run;` and `j.get<RunRecord>()` work). from_json expects JSON that
// validate_results accepted, or a record these files wrote.
void to_json(nlohmann::json& j, const ClockReading& r);
void to_json(nlohmann::json& j, const CuptiOverhead& o);
void to_json(nlohmann::json& j, const RunRecord& r);
void from_json(const nlohmann::json& j, RunRecord& r);
void to_json(nlohmann::json& j, const VariantSummary& s);
void to_json(nlohmann::json& j, const VariantRecord& v);
void from_json(const nlohmann::json& j, VariantRecord& v);
void to_json(nlohmann::json& j, const BenchmarkRecord& b);
void from_json(const nlohmann::json& j, BenchmarkRecord& b);
void to_json(nlohmann::json& j, const ResultsRecord& r);
void from_json(const nlohmann::json& j, ResultsRecord& r);

}  // namespace noeira
