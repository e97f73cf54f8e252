#include "harness/cli/compare_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/gate/compare_files.h"

namespace noeira {

std::function<int()> add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd =
      app.add_subcommand("compare",
                         "Regression gate: compare two results files; exit 1 on a significant "
                         "slowdown above the threshold or an accuracy regression");
  cmd->add_option("BASE", o->base_path,
                  "Baseline results JSON, or a suite directory (results/baselines/<gpu>)")
      ->required();
  cmd->add_option("NEW", o->new_path, "New results JSON, or a suite directory")->required();
  cmd->add_option("--max-slowdown", o->max_slowdown,
                  "Largest tolerated slowdown of the median step time: 5% or 0.05")
      ->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "1 - the confidence of the ratio's bootstrap interval (0.05: 95%)")
      ->check(CLI::Range(1e-9, 0.5))
      ->capture_default_str();
  cmd->add_option("--timer", o->timer,
                  "Timer to compare: auto (device, else event, else wall), wall, device, event")
      ->check(CLI::IsMember({"auto", "wall", "device", "event"}))
      ->capture_default_str();
  cmd->add_flag("--ignore-device", o->ignore_device,
                "Compare files measured on different GPUs/CPUs");
  cmd->add_flag("--allow-missing", o->allow_missing,
                "Do not fail when a variant that ran in the base is missing, failed or "
                "unavailable in the new file (it is still listed)");
  return [cmd, o]() { return cmd->parsed() ? run_compare(*o) : kNotThisCommand; };
}

}  // namespace noeira
