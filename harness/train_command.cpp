#include "harness/train_command.h"

#include <cstdio>
#include <memory>

#include "harness/cli.h"
#include "harness/cli_options.h"
#include "harness/progress.h"
#include "harness/session.h"

namespace noeira {

namespace {

struct TrainOptions {
  std::string model = "mlp";
  int epochs = 0;  // 0 = the recipe's
  uint64_t seed = 0;
  DataOptions data;
  std::string save, resume;
  int threads = 0;
  std::string target = "cpu";
  std::string dtype = "fp32";
  bool graph = false;
};

int run_train(const TrainOptions& o) {
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  const int epochs = o.epochs > 0 ? o.epochs : recipe->epochs;

  Result<DataSplit> data = load_recipe_data(*recipe, o.data.dataset, make_data_source(o.data));
  if (!data) return report_error(data.error().message, kExitFailure);

  TrainerOptions to;
  to.device = *device;
  to.threads = o.threads;
  to.seed = o.seed;
  to.use_train_cuda_graph = o.graph;
  to.amp = o.dtype == "bf16" ? BF16Policy : NoAMP;
  to.total_steps = static_cast<int64_t>(epochs) * steps_per_epoch(*recipe, *data);
  Result<std::unique_ptr<Trainer>> made = make_trainer(*recipe, *data, to);
  if (!made) return report_error(made.error().message, kExitFailure);
  Trainer& trainer = **made;
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
  trainer.train(epochs, on_epoch, on_step);

  if (!o.save.empty()) {
    if (Status s = trainer.save_checkpoint(o.save); !s)
      return report_error(s.error().message, kExitFailure);
    std::printf("saved checkpoint %s (epoch %d, step %lld)\n", o.save.c_str(),
                trainer.epochs_done(), static_cast<long long>(trainer.steps_done()));
  }
  return kExitOk;
}

}  // namespace

std::function<int()> add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train one model and print per-epoch loss and "
                                              "test top-1");
  cmd->add_option("--model", o->model, "Model (a recipe in models/recipes)")
      ->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "Epochs to train (default: the recipe's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->seed, "Seed for init and shuffle")->capture_default_str();
  add_dataset_option(cmd, o->data.dataset);
  cmd->add_option("--data-dir", o->data.data_dir,
                  "Directory holding <dataset>/ files (default: $NOEIRA_DATA, then the cache "
                  "~/.cache/noeira, then download)");
  cmd->add_option("--save", o->save, "Write a checkpoint here at the end (atomically)");
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
  return [cmd, o]() { return cmd->parsed() ? run_train(*o) : -1; };
}

}  // namespace noeira
