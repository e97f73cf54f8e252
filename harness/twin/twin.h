// The PyTorch twin (reference/torch_nn_reference.py) as a subprocess: one JSON object
// on stdout, stderr kept in a log, a time limit. Any failure becomes a reason string
// for the table, never a crash of the harness.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results/records.h"

namespace noeira {

struct PythonProbe {
  std::string python;  // the interpreter to use; empty when none has torch
  std::string torch_version;
  std::string reason;  // why none was usable
};

// The twin's environment that scripts/twin-env makes: $NOEIRA_TWIN_VENV, else
// ${XDG_CACHE_HOME:-~/.cache}/noeira/twin-venv; its bin/python (which may not exist).
std::filesystem::path twin_venv_python();

// The interpreters to try, in order: `requested` (--python) alone if given, else
// $NOEIRA_PYTHON, the twin's venv, python3, /usr/bin/python3.
std::vector<std::string> twin_python_candidates(const std::string& requested);

// The first of twin_python_candidates that imports torch.
PythonProbe find_python_with_torch(const std::string& requested);

struct TwinRequest {
  std::string python;
  std::filesystem::path recipe;
  std::filesystem::path data_dir;
  std::string dataset;  // empty = the recipe's
  std::string device;   // "cpu" | "cuda"
  std::string mode;     // "eager" | "compiled" | "graphs"
  std::string dtype;    // "fp32" | "bf16"
  uint64_t seed = 0;
  int epochs = 1;
  int64_t max_steps = 0;
  int64_t warmup = 0;
  int threads = 0;
  std::optional<std::filesystem::path> init_checkpoint;
  int ranks = 1;  // the gpt family's data parallelism: --ranks, --zero (twin DDP / ZeRO-1)
  int zero = 0;
  double timeout_seconds = 900;
  std::filesystem::path log;  // stderr goes here
  // Time to target: --target-metric/--target-score when the metric is set.
  std::string target_metric;
  double target_score = 0;
  // noeira-bench profile: torch.profiler over this many steps after the warm-up
  // (reply's "profile"), and its Chrome trace ("" = none).
  int64_t profile_steps = 0;
  std::filesystem::path profile_trace;
};

// The fields of a training reply the harness reads (reference/twin, schema noeira-twin/1).
struct TwinReply {
  bool event_timer = false;          // "timer": "event": step_times_ms are CUDA events
  std::vector<double> step_times_ms;
  Nullable<double> wall_ms_per_step;  // with event timing: the host clock over the loop, per step
  Nullable<double> test_top1, test_loss, train_loss_last_epoch;
  std::vector<Nullable<double>> losses;  // every step's; null where not a number
  Optional<int64_t> steps;
  Nullable<double> compile_seconds;  // torch.compile's time; null in eager
  TwinImpl impl;
  // "cpu_window": /proc/stat's cpu line and /proc/loadavg as the twin read them at the
  // start and the end of its timed loop; absent where it could not read them.
  Optional<CpuLoadWindow> cpu_load;
  // Peak memory, time to target, energy (reference/twin/resources.py), when it sent them.
  Optional<MemoryRecord> memory;
  Optional<TimeToTargetRecord> time_to_target;
  Optional<EnergyRecord> energy;
};

struct TwinOutcome {
  bool ok = false;          // a JSON object with ok:true came back
  bool available = false;   // the mode ran (false: unavailable, see reason)
  std::string reason;       // unavailable reason, or "twin failed: ..." one line
  TwinReply reply;          // its fields, when ok
  nlohmann::json result;    // the whole object when ok (the scaling file records it as is)
  double seconds = 0.0;
};

std::filesystem::path twin_script();
TwinOutcome run_twin(const TwinRequest& r);

// The twin's baseline probe (reference/twin/probe.py, harness/env/baseline_probe.h) on
// `device` ("cpu" | "cuda") at 1 and `threads` threads: its probe object {rows, math},
// or {error} with one line saying why it did not come back.
nlohmann::json run_twin_probe(const std::string& python, const std::string& device, int threads,
                              const std::filesystem::path& log, double timeout_seconds);

}  // namespace noeira
