#include "harness/cli/profile_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/cli_options.h"
#include "harness/profile/profile_options.h"

namespace noeira {

std::function<int()> add_profile_command(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<ProfileOptions>();
  o->command_line = command_line;
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Where each training step's time goes: every op call of ours timed and grouped by "
      "category (gemm, convolution, attention, normalisation, activation, embedding, loss, "
      "optimizer, data, copy, other), beside the twin's under torch.profiler on the same "
      "steps; the top ops of each side; optional Chrome traces (Perfetto, chrome://tracing)");
  add_model_options(cmd, o->model, o->dtype, o->target);
  cmd->add_option("--variant", o->variant,
                  "Our variant: eager, bf16 or host-batch (default: eager, or bf16 with --dtype "
                  "bf16); a graph variant replays without calling ops, so it cannot be attributed");
  cmd->add_option("--steps", o->steps, "Profiled steps, after the warm-up")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps first (the twin compiles in them)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--twin", o->twin, "Twin modes to profile beside ours: eager,compiled,graphs or none")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--python", o->python, "Python interpreter with torch for the twin "
                                         "(default: $NOEIRA_PYTHON, the twin's venv, python3)");
  cmd->add_option("--trace", o->trace_dir,
                  "Write one Chrome trace-event JSON per side into this folder (the profiled "
                  "steps only)");
  cmd->add_option("--out", o->out, "Results JSON (default noeira-profile-<model>-<target>-<dtype>.json; "
                                   "the breakdown in benchmarks[0].profile)");
  cmd->add_option("--threads", o->threads, "CPU threads for us and the twin (default: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--twin-timeout", o->twin_timeout, "Seconds before a twin run is killed")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--budget", o->budget,
                "Also print each op's roofline budget on the GPU: its FLOPs and operand bytes "
                "per step over the part's peak rate and memory bandwidth (with --target gpu "
                "and no GPU here: the shapes from one CPU step, no twin)");
  cmd->add_option("--budget-device", o->budget_device,
                  "The part to budget for when no GPU is here (H200, H100, H100 PCIe, A100, ...)")
      ->capture_default_str();
  add_dataset_option(cmd, o->data.dataset);
  cmd->add_option("--data-dir", o->data.data_dir, "Directory holding <dataset>/ files");
  return [cmd, o]() {
    if (!cmd->parsed()) return kNotThisCommand;
    return run_profile(*o);
  };
}

}  // namespace noeira
