#include "harness/cli/train_command.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/cli_options.h"
#include "harness/run/interrupt.h"
#include "harness/run/progress.h"
#include "harness/train/train_options.h"
#include "models/family.h"

namespace noeira {

int stopped(const TrainOptions& o, int64_t step, const std::function<Status()>& save) {
  std::printf("\nstopped by %s after step %lld\n", interrupt_name().c_str(),
              static_cast<long long>(step));
  if (o.save.empty()) {
    std::printf("no --save given: nothing kept\n");
  } else if (Status s = save(); !s) {
    report_error(s.error().message, kExitFailure);
  } else {
    std::printf("resume with --resume %s\n", o.save.c_str());
  }
  std::fflush(stdout);
  return interrupted_exit_code();
}

namespace {

// Started by mpirun (Open MPI, or a PMI launcher) with more than one rank.
bool launched_under_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
  return false;
}

int run_train(const TrainOptions& o) {
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  const bool lm = family_traits(*recipe).language_model;
  if (lm && o.epochs > 0)
    return report_error("model " + recipe->name + " trains for steps, not epochs: use --steps N",
                        kExitUsage);
  if (!lm && (o.steps > 0 || o.host_batch || o.zero >= 0))
    return report_error("--steps, --host-batch and --zero are for the gpt family; model " +
                        recipe->name +
                        " trains for --epochs", kExitUsage);
  const int epochs = o.epochs > 0 ? o.epochs : recipe->epochs;
  if (o.batch > 0) recipe->batch = o.batch;  // the recipe file (and its hash) stay as they are

  Result<DataSplit> data = load_recipe_data(*recipe, o.data.dataset, make_data_source(o.data));
  if (!data) return report_error(data.error().message, kExitFailure);

  TrainerOptions to;
  to.device = *device;
  to.threads = o.threads;
  to.seed = o.seed;
  to.use_train_cuda_graph = o.graph;
  to.amp = o.dtype == "bf16" ? BF16Policy : NoAMP;
  if (lm) return run_train_lm(o, *recipe, *data, to);
  to.total_steps = static_cast<int64_t>(epochs) * steps_per_epoch(*recipe, *data);
  Result<std::unique_ptr<TrainerCore>> made = make_trainer(*recipe, *data, to);
  if (!made) return report_error(made.error().message, kExitFailure);
  TrainerCore& trainer = **made;
  if (!o.resume.empty()) {
    if (Status s = trainer.load_checkpoint(o.resume); !s)
      return report_error(s.error().message, kExitFailure);
  }

  std::printf("noeira-bench train: model %s on %s, target %s, %s, seed %llu, batch %lld\n",
              recipe->name.c_str(), data->train.name.c_str(),
              trainer.backend_description().c_str(), o.dtype.c_str(),
              static_cast<unsigned long long>(trainer.config().seed),
              static_cast<long long>(recipe->batch));
  std::printf("parameters: %lld in %zu tensors\n", static_cast<long long>(trainer.params().count()),
              trainer.params().all().size());
  std::printf("%s", trainer.plan().describe().c_str());
  if (trainer.epochs_done() > 0)
    std::printf("resumed from %s at epoch %d (step %lld)\n", o.resume.c_str(),
                trainer.epochs_done(), static_cast<long long>(trainer.steps_done()));
  if (trainer.epochs_done() >= epochs)
    std::printf("nothing to do: the checkpoint already has %d epochs (asked for %d)\n",
                trainer.epochs_done(), epochs);
  std::fflush(stdout);

  std::unique_ptr<Progress> progress;
  auto on_step = [&](int64_t done, int64_t total) {
    if (!progress)
      progress = std::make_unique<Progress>("epoch " + std::to_string(trainer.epochs_done() + 1) +
                                            "/" + std::to_string(epochs));
    progress->update(done, total);
  };
  auto on_epoch = [&](const EpochStats& e) {
    if (progress) progress->finish();
    progress.reset();
    std::printf("epoch %d/%d  train loss %.4f  train top1 %.2f%%  test loss %.4f  test top1 "
                "%.2f%%  %.2f s (%.3f ms/step)\n",
                e.epoch, epochs, e.train_loss, e.train_top1, e.test.loss, e.test.top1, e.seconds,
                e.steps ? 1000.0 * e.seconds / static_cast<double>(e.steps) : 0.0);
    std::fflush(stdout);
  };
  auto save = [&]() -> Status {
    NOEIRA_TRY(trainer.save_checkpoint(o.save));
    std::printf("saved checkpoint %s (%s %d, step %lld)\n", o.save.c_str(),
                trainer.in_epoch() ? "during epoch" : "epoch",
                trainer.epochs_done() + (trainer.in_epoch() ? 1 : 0),
                static_cast<long long>(trainer.steps_done()));
    std::fflush(stdout);
    return {};
  };
  // --save-every: after every N-th step (at an epoch's end, after its evaluation).
  Status periodic;
  auto due = [&] { return o.save_every > 0 && trainer.steps_done() % o.save_every == 0 && periodic.ok(); };
  auto on_step_saving = [&](int64_t done, int64_t total) {
    on_step(done, total);
    if (done < total && due()) periodic = save();
  };
  auto on_epoch_saving = [&](const EpochStats& e) {
    on_epoch(e);
    if (trainer.epochs_done() < epochs && due()) periodic = save();
  };
  trainer.train(epochs, on_epoch_saving, on_step_saving,
                [&] { return interrupt_requested() || !periodic.ok(); });
  if (!periodic.ok()) return report_error(periodic.error().message, kExitFailure);
  if (interrupt_requested()) {
    if (progress) progress->finish();
    return stopped(o, trainer.steps_done(), save);
  }

  if (!o.save.empty()) {
    if (Status s = save(); !s) return report_error(s.error().message, kExitFailure);
  }
  return kExitOk;
}

}  // namespace

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
                  "gpt family: train until this many optimizer steps (default: the recipe's); "
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
                  "gpt family, data parallel over the ranks of `mpirun -np N`: ZeRO stage "
                  "(0 = DDP, 1 = Adam state sharded, 2 = also gradients, 3 = also parameters; "
                  "docs/distributed.md); each rank trains the recipe's batch, so the global "
                  "batch is N times it. Started by mpirun with N > 1, stage 0 is the default")
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
    if (o->zero < 0 && !launched_under_mpirun()) install_interrupt_handlers();
    return run_train(*o);
  };
}

}  // namespace noeira
