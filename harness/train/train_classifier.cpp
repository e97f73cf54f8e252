#include "harness/train/train_options.h"

#include <algorithm>
#include <cstdio>
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

int train_failed(ProcessGroup* group, const std::string& message, int code) {
  report_error(message, code);
  if (group) group->abort(code);
  return code;
}

namespace {

const char* zero_stage_summary(int stage) {
  switch (stage) {
    case 0: return "DDP: reduce-scatter + all-gather of gradients";
    case 1: return "ZeRO-1: optimizer state per slice, parameters all-gathered";
    case 2: return "ZeRO-2: optimizer state and gradients per slice, buckets reduced during backward";
    default: return "ZeRO-3: optimizer state, gradients and parameters per slice, layers gathered";
  }
}

}  // namespace

void print_data_parallel(const ProcessGroup& group, const DataParallelSync& d, int64_t batch) {
  std::printf("data parallel: %d ranks over %s, ZeRO stage %d (%s), global batch %lld rows; "
              "%lld padded parameter floats, %lld per rank's slice\n",
              group.size(), group.engine().c_str(), d.zero_stage(), zero_stage_summary(d.zero_stage()),
              static_cast<long long>(batch * group.size()), static_cast<long long>(d.padded_params()),
              static_cast<long long>(d.slice()));
  if (const LayerShards* sh = d.shards(); sh && d.zero_stage() >= 2)
    std::printf("ZeRO-%d per rank: %s = slice %lld + resident bucket %lld + layer window %lld "
                "floats (+ alignment), %zu buckets\n",
                d.zero_stage(), d.zero_stage() >= 3 ? "parameters and gradients" : "gradients",
                static_cast<long long>(d.slice()), static_cast<long long>(sh->buckets()[0].count),
                static_cast<long long>(sh->window_floats()), sh->buckets().size());
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
  if (!lm && o.host_batch)
    return report_error("--host-batch is a gpt-family baseline; model " + recipe->name +
                        " gathers its batches on the device", kExitUsage);
  int epochs = o.epochs > 0 ? o.epochs : recipe->epochs;
  if (o.batch > 0) recipe->batch = o.batch;  // the recipe file (and its hash) stay as they are

  Result<DataSplit> data = load_recipe_data(*recipe, o.data.dataset, make_data_source(o.data));
  if (!data) return report_error(data.error().message, kExitFailure);

  TrainerOptions to;
  to.device = *device;
  to.threads = o.threads;
  to.seed = o.seed;
  to.use_train_cuda_graph = o.graph;
  to.amp = o.dtype == "bf16" ? BF16Policy : NoAMP;

  // Data parallel: started by mpirun with several ranks, or --zero given.
  Result<std::unique_ptr<ProcessGroup>> joined = ProcessGroup::join(*device, o.zero >= 0);
  if (!joined) return report_error(joined.error().message, o.zero >= 0 ? kExitUsage : kExitFailure);
  std::unique_ptr<ProcessGroup> group = std::move(joined).value();
  std::unique_ptr<GradientSync> sync;
  if (group) {
    if (Status s = group->quiet_unless_first(); !s) return train_failed(group.get(), s.error().message, kExitFailure);
    Result<std::unique_ptr<GradientSync>> made = group->make_sync(std::max(o.zero, 0));
    if (!made) return train_failed(group.get(), made.error().message, kExitUsage);
    sync = std::move(made).value();
  }
  if (lm) return run_train_lm(o, *recipe, *data, to, group.get(), std::move(sync));
  // --steps N (the image families): stop after N steps, mid-epoch if it falls there (a
  // checkpoint then resumes at that step); the schedule still spans the epochs, so a run
  // cut at N steps is the first N steps of the whole run.
  const int64_t spe = steps_per_epoch(*recipe, *data, group ? group->size() : 1);
  to.total_steps = static_cast<int64_t>(epochs) * spe;
  if (o.steps > 0 && spe > 0)  // spe 0: a batch larger than the data, which the trainer refuses
    epochs = static_cast<int>(std::min<int64_t>((o.steps + spe - 1) / spe, epochs));
  Result<std::unique_ptr<TrainerCore>> made = make_trainer(*recipe, *data, to, std::move(sync));
  if (!made) return train_failed(group.get(), made.error().message, kExitFailure);
  TrainerCore& trainer = **made;
  if (!o.resume.empty()) {
    if (Status s = trainer.load_checkpoint(o.resume); !s)
      return train_failed(group.get(), s.error().message, kExitFailure);
  }
  const DataParallelSync* d = group ? group->sync() : nullptr;

  std::printf("noeira-bench train: model %s on %s, target %s, %s, seed %llu, batch %lld\n",
              recipe->name.c_str(), data->train.name.c_str(),
              trainer.backend_description().c_str(), o.dtype.c_str(),
              static_cast<unsigned long long>(trainer.config().seed),
              static_cast<long long>(recipe->batch));
  if (d) print_data_parallel(*group, *d, recipe->batch);
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
  const bool speaks = !group || group->rank() == 0;
  auto on_step = [&](int64_t done, int64_t total) {
    if (!speaks) return;
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
  Status replicas;  // --check-replicas: the ranks' parameters agree after every step
  auto on_step_saving = [&](int64_t done, int64_t total) {
    on_step(done, total);
    if (o.check_replicas && d && replicas.ok()) replicas = d->check_replicas(trainer.steps_done());
    if (done < total && due()) periodic = save();
  };
  auto on_epoch_saving = [&](const EpochStats& e) {
    on_epoch(e);
    if (trainer.epochs_done() < epochs && due()) periodic = save();
  };
  // Data parallel: every rank takes every step (a rank that stopped alone would leave the
  // others waiting in a collective), so Ctrl-C ends the job through mpirun instead.
  auto step_limit = [&] { return o.steps > 0 && trainer.steps_done() >= o.steps; };
  trainer.train(epochs, on_epoch_saving, on_step_saving, [&] {
    return (!group && interrupt_requested()) || !periodic.ok() || !replicas.ok() || step_limit();
  });
  if (!replicas.ok()) return train_failed(group.get(), replicas.error().message, kExitFailure);
  if (!periodic.ok()) return train_failed(group.get(), periodic.error().message, kExitFailure);
  if (!group && interrupt_requested()) {
    if (progress) progress->finish();
    return stopped(o, trainer.steps_done(), save);
  }

  if (!o.save.empty()) {
    if (Status s = save(); !s) return train_failed(group.get(), s.error().message, kExitFailure);
  }
  return kExitOk;
}

}  // namespace noeira
