#include "harness/train/train_options.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>

#include "harness/exit_codes.h"
#include "harness/cli/cli_options.h"
#include "harness/run/interrupt.h"
#include "harness/run/progress.h"
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

// The classifiers and regressors: epochs, a line per epoch with the test loss and top-1.
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

}  // namespace noeira
