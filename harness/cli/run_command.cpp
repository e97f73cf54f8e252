#include "harness/cli/run_command.h"

#include <cstdlib>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/cli_options.h"
#include "harness/run/interrupt.h"
#include "harness/run/run_options.h"
#include "harness/run/scaling_runner.h"

namespace noeira {

std::function<int()> add_run_command(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<RunOptions>();
  o->command_line = command_line;
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the variant matrix over seeds plus the PyTorch twin, print the comparison "
             "table and write a results JSON (the default subcommand)");
  add_model_options(cmd, o->model, o->dtype, o->target);
  cmd->add_option("--variants", o->variants,
                  "Our variants: eager, graph, bf16, bf16+graph, host-batch (gpt family: the "
                  "batch built on the host) (default: those of --dtype the target supports; "
                  "bf16 keeps the fp32 ones as a baseline)")
      ->delimiter(',');
  auto* seeds = cmd->add_option("--seeds", o->seeds, "Number of seeds (0..N-1)")
                    ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed-list", o->seed_list, "Explicit seeds, e.g. 1,2,3")->delimiter(',')
      ->excludes(seeds);
  cmd->add_option("--steps", o->steps,
                  "Training steps per run (default: the recipe's epochs or, gpt family, steps; "
                  "on a CPU a gpt recipe is cut to a few steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "Untimed steps at the start of each run (default 20, quick 5)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--twin", o->twin, "Twin modes: eager,compiled,graphs or none")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--python", o->python, "Python interpreter with torch for the twin "
                                         "(default: $NOEIRA_PYTHON, python3, /usr/bin/python3)");
  cmd->add_option("--out", o->out, "Results JSON (default noeira-results-<model>-<target>-<dtype>.json); "
                                   "twin logs go to <out>.logs/");
  cmd->add_flag("--quick", o->quick, "The recipe's small smoke configuration (few steps)");
  cmd->add_flag("--parity", o->parity, "Also run the twin from our step-0 weights and batches and "
                                       "compare per-step losses (fp32, bound 1e-4)");
  cmd->add_option("--threads", o->threads, "CPU threads for us and the twin (default: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--order", o->order,
                  "interleaved: ours and the twin's runs alternate seed by seed (each variant, "
                  "then each twin mode, per seed); blocked: every seed of one variant, then the "
                  "next (the old order)")
      ->check(CLI::IsMember({"interleaved", "blocked"}))->capture_default_str();
  add_dataset_option(cmd, o->data.dataset);
  cmd->add_option("--data-dir", o->data.data_dir, "Directory holding <dataset>/ files");
  cmd->add_option("--min-samples", o->min_samples, "Stopping rule: minimum timed steps")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-noise", o->max_noise, "Stopping rule: relative noise target (std/mean)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-time", o->max_seconds, "Stopping rule: seconds of timing per run")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--twin-timeout", o->twin_timeout, "Seconds before a twin run is killed")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--ranks-list", o->ranks_list,
                  "gpt family: the data-parallel scaling benchmark over these rank counts "
                  "(e.g. 1,2,4; ranks > 1 start with mpirun), instead of the variant matrix")
      ->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--zero", o->zero_list, "With --ranks-list: ZeRO stages (0 = DDP, 1, 2, 3), "
                                           "e.g. 0,1,2,3")
      ->delimiter(',')->check(CLI::Range(0, 3))->capture_default_str();
  return [cmd, o]() {
    if (!cmd->parsed()) return kNotThisCommand;
    // The benchmark starts its own ranks (an mpirun per configuration); under mpirun every
    // rank would run the whole matrix. Rank 0 says so, the others leave quietly.
    if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n && std::atoi(n) > 1) {
      const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
      if (r && std::atoi(r) != 0) return kExitUsage;
      return report_error("the benchmark starts its ranks itself: run it without mpirun, e.g. "
                          "noeira-bench --model " + o->model + " --ranks-list " + n +
                          " --zero 0,1,2,3 (training under mpirun: noeira-bench train ...)",
                          kExitUsage);
    }
    if (o->ranks_list.empty() && cmd->count("--zero") > 0)
      return report_error("--zero chooses the stages of the scaling benchmark: add --ranks-list, "
                          "e.g. --ranks-list 1,2 --zero 0,1,2,3", kExitUsage);
    if (!o->ranks_list.empty()) {
      ScalingOptions s;
      s.model = o->model;
      s.ranks = o->ranks_list;
      s.zero = o->zero_list;
      if (o->steps > 0) s.steps = o->steps;
      s.threads_per_rank = o->threads > 0 ? o->threads : 1;
      s.seed = o->seed_list.empty() ? 0 : o->seed_list.front();
      s.twin = !(o->twin.size() == 1 && o->twin[0] == "none");
      s.python = o->python;
      s.out = o->out;
      s.data = o->data;
      s.timeout_seconds = o->twin_timeout;
      return run_scaling(s);
    }
    install_interrupt_handlers();  // Ctrl-C keeps the finished seeds (harness/results/partial_results.h)
    return run_matrix(*o);
  };
}

}  // namespace noeira
