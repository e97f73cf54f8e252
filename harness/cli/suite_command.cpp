#include "harness/cli/suite_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/run/interrupt.h"
#include "harness/suite/suite_runner.h"

namespace noeira {

std::function<int()> add_suite_command(CLI::App& app) {
  auto o = std::make_shared<SuiteOptions>();
  CLI::App* cmd = app.add_subcommand(
      "suite",
      "The published comparison: every model's variant matrix and the twin (one run each), "
      "then one report (markdown + HTML): the environment every run shares, then ours vs the "
      "twin per model, with ratio and memory charts");
  cmd->add_option("--models", o->models,
                  "Models in table order (default: gpt, resnet20, cifar-cnn, mlp, conv2d-mnist, "
                  "vit on a GPU; gpt-tiny, resnet20, cifar-cnn, mlp, conv2d-mnist, vit-tiny on a "
                  "CPU, with the CIFAR-10 subset)")
      ->delimiter(',');
  cmd->add_option("--dtype-list", o->dtypes,
                  "Precisions: the gpt family gets a row per precision; the others one run "
                  "(bf16 includes the fp32 variants)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Seeds per variant")->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick, "Each recipe's small smoke configuration");
  cmd->add_option("--target", o->target, "auto, cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU threads for us and the twin (default: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--twin", o->twin, "Twin modes: eager,compiled,graphs or none")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--python", o->python, "Python interpreter with torch for the twin");
  cmd->add_option("--data-dir", o->data_dir, "Directory holding <dataset>/ files");
  cmd->add_option("--twin-timeout", o->twin_timeout, "Seconds before a twin run is killed")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--order", o->order,
                  "Each run's order: interleaved (ours and the twin's alternate seed by seed) "
                  "or blocked (the old order)")
      ->check(CLI::IsMember({"interleaved", "blocked"}))->capture_default_str();
  CLI::Option* out_dir = cmd->add_option("--out-dir", o->out_dir,
                  "Directory for suite.json, the results, logs/ and report.{md,html} "
                  "(default noeira-suite-<target>); inside the repository's results/ it is "
                  "refused from a dirty tree unless --allow-dirty");
  CLI::Option* publish = cmd->add_flag("--publish", o->publish,
                  "Write into results/<machine>/ of the checkout holding the current directory "
                  "(e.g. results/intel-fam6-m207-2core, results/nvidia-h200)")
      ->excludes(out_dir);
  cmd->add_flag("--allow-dirty", o->allow_dirty,
                "Write into the repository's results/ even from a dirty tree (uncommitted "
                "changes); the report then says so. Without it that is refused (exit 2)");
  cmd->add_option("--resume", o->resume,
                  "Finish an interrupted suite in this directory (its own options; finished "
                  "runs are kept)")
      ->excludes(out_dir)
      ->excludes(publish);
  return [cmd, o]() {
    if (!cmd->parsed()) return kNotThisCommand;
    install_interrupt_handlers();  // Ctrl-C: the current run keeps its finished seeds
    return run_suite(*o);
  };
}

}  // namespace noeira
