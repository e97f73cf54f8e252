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
};

struct TwinOutcome {
  bool ok = false;          // a JSON object with ok:true came back
  bool available = false;   // the mode ran (false: unavailable, see reason)
  std::string reason;       // unavailable reason, or "twin failed: ..." one line
  nlohmann::json result;    // the twin's JSON object when ok
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
