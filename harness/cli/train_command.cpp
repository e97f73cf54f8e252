#include "harness/cli/train_command.h"

#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/cli_options.h"
#include "harness/run/interrupt.h"
#include "harness/train/train_options.h"
#include "models/recipe.h"
#include "parallel/process_group.h"

namespace noeira {

std::function<int()> add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train one model and print per-epoch loss and "
                                              "test top-1 (gpt family: per-interval train and "
                                              "validation loss, tokens/s)");
  cmd->add_option("--model", o->model, "Model (a recipe in models/recipes)")
      ->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "Epochs to train (default: the recipe's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o->steps,
                  "Train until this many optimizer steps (gpt family: default the recipe's; "
                  "image models: stop after N steps, mid-epoch if need be); "
                  "the learning-rate schedule spans the recipe's steps (or --steps if more), "
                  "so a stopped run resumes exactly")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--host-batch", o->host_batch,
                "gpt family: build each batch on the host and copy it in (the baseline) "
                "instead of on the device");
  cmd->add_option("--seed", o->seed, "Seed for init and shuffle")->capture_default_str();
  add_dataset_option(cmd, o->data.dataset);
  cmd->add_option("--data-dir", o->data.data_dir,
                  "Directory holding <dataset>/ files (default: $NOEIRA_DATA, then the cache "
                  "~/.cache/noeira, then download)");
  cmd->add_option("--save", o->save, "Write a checkpoint here at the end (atomically), and "
                                      "when Ctrl-C stops training (resume it with --resume)");
  cmd->add_option("--save-every", o->save_every,
                  "Also write the --save checkpoint every N optimizer steps (atomically: the "
                  "last one stays whole until the next replaces it)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--resume", o->resume, "Continue from this checkpoint")
      ->check(CLI::ExistingFile);
  cmd->add_option("--threads", o->threads, "CPU threads (default: all available)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--target", o->target, "cpu, gpu or auto")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "fp32, or bf16 autocast (fp32 master weights)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--graph", o->graph, "Capture the training step as a CUDA graph (gpu only)");
  cmd->add_option("--zero", o->zero,
                  "Data parallel over the ranks of `mpirun -np N` (every model): ZeRO stage "
                  "(0 = DDP, 1 = optimizer state sharded, 2 = also gradients, 3 = also "
                  "parameters; docs/distributed.md); each rank trains the recipe's batch, so "
                  "the global batch is N times it. Started by mpirun with N > 1, stage 0 is the "
                  "default")
      ->check(CLI::Range(0, 3));
  cmd->add_flag("--check-replicas", o->check_replicas,
                "with --zero: after every step, check that every rank holds the same "
                "parameters (a hash of them; slow, for tests)");
  cmd->add_option("--timing-json", o->timing_json,
                  "gpt family: write a summary of the run (per-rank median step time, tokens/s, "
                  "communication and memory per rank) here; the scaling benchmark reads it");
  cmd->add_option("--batch", o->batch,
                  "Rows per step (per rank with --zero; default: the recipe's), at most 2^24")
      ->check(CLI::Range(int64_t{1}, kMaxRecipeSize));
  return [cmd, o]() {
    if (!cmd->parsed()) return kNotThisCommand;
    if (o->save_every > 0 && o->save.empty())
      return report_error("--save-every writes the --save checkpoint: add --save PATH", kExitUsage);
    // One process stops cleanly on Ctrl-C; ranks under mpirun keep the default (a rank
    // stopping alone would leave the others waiting in a collective).
    if (o->zero < 0 && ProcessGroup::launched_ranks() <= 1) install_interrupt_handlers();
    return run_train(*o);
  };
}

}  // namespace noeira
