#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "harness/exit_codes.h"
#include "harness/cli/cli_options.h"
#include "harness/run/interrupt.h"
#include "harness/run/progress.h"
#include "harness/run/stats.h"
#include "harness/train/train_options.h"
#include "parallel/process_group.h"
#include "nn/atomic_file.h"

namespace noeira {

namespace {

// The scaling benchmark's summary of one run (harness/run/scaling_runner.h reads it): every
// rank's median step time (after the first 3 steps), tokens/s over the global batch, the
// collectives' bytes per step and each rank's parameter, gradient and optimizer bytes.
// Collective under MPI; rank 0 writes (atomically).
Status write_timing(const std::string& path, const AutoregressiveTrainer& t, ProcessGroup* group,
                    std::vector<double> step_ms, const EpochStats& last, int64_t tokens_per_step) {
  if (step_ms.size() > 3) step_ms.erase(step_ms.begin(), step_ms.begin() + 3);
  const double mine = step_ms.empty() ? 0.0 : median(step_ms);
  std::vector<double> per_rank(static_cast<size_t>(t.ranks()), 0.0);
  const int rank = group ? group->rank() : 0;
  const DataParallelSync* d = group ? group->sync() : nullptr;
  per_rank[static_cast<size_t>(rank)] = mine;
  if (group) group->all_sum(per_rank.data(), static_cast<int64_t>(per_rank.size()));
  if (rank != 0) return {};
  const double slowest = *std::max_element(per_rank.begin(), per_rank.end());
  const MemoryPlan& plan = t.plan();
  const nlohmann::json j = {
      {"ranks", t.ranks()},
      {"zero", d ? d->zero_stage() : -1},
      {"engine", group ? group->engine() : std::string("none (one process)")},
      {"steps_timed", step_ms.size()},
      {"per_rank_median_step_ms", per_rank},
      {"step_ms", slowest},  // a step ends when the slowest rank's does
      {"tokens_per_step", tokens_per_step},
      {"tokens_per_s", slowest > 0 ? 1000.0 * static_cast<double>(tokens_per_step) / slowest : 0.0},
      {"comm_bytes_per_step", d ? d->comm_bytes_per_step() : 0},
      {"bytes_per_rank",
       {{"parameters", plan.bytes(MemCategory::kParams)},
        {"gradients", plan.bytes(MemCategory::kGrads)},
        {"optimizer_state", plan.bytes(MemCategory::kOptimState)}}},
      {"final_train_loss", last.train_loss},
      {"final_val_loss", last.test.loss}};
  return write_file_atomically(path, j.dump(2) + "\n", "the timing summary");
}

// Writes the checkpoint (atomically: the last one is kept until the new one is whole).
Status save_lm(const AutoregressiveTrainer& t, const std::string& path, bool speaks) {
  NOEIRA_TRY(t.save_checkpoint(path));
  if (speaks)
    std::printf("saved checkpoint %s (step %lld)\n", path.c_str(),
                static_cast<long long>(t.steps_done()));
  std::fflush(stdout);
  return {};
}

}  // namespace

// The gpt family: steps, not epochs; a line per evaluation interval with the train loss,
// the validation loss and the throughput.
int run_train_lm(const TrainOptions& o, const Recipe& recipe, const DataSplit& data,
                 TrainerOptions to, ProcessGroup* group, std::unique_ptr<GradientSync> sync) {
  const int64_t total = o.steps > 0 ? o.steps : recipe.gpt.steps;
  // The schedule spans the recipe's steps (or more, if asked for more), whatever --steps
  // stops at: a run stopped at step N and resumed ends exactly as one uninterrupted run.
  to.total_steps = std::max(total, recipe.gpt.steps);
  to.host_batch = o.host_batch;
  Result<std::unique_ptr<AutoregressiveTrainer>> made = make_lm_trainer(recipe, data, to, std::move(sync));
  if (!made) return train_failed(group, made.error().message, kExitFailure);
  std::unique_ptr<AutoregressiveTrainer> owned = std::move(made).value();
  AutoregressiveTrainer& t = *owned;
  const bool speaks = !group || group->rank() == 0;
  const DataParallelSync* d = group ? group->sync() : nullptr;
  if (!o.resume.empty()) {
    if (Status s = t.load_checkpoint(o.resume); !s) return train_failed(group, s.error().message, kExitFailure);
  }
  const int64_t tokens_per_step = recipe.batch * t.context() * t.ranks();
  std::printf("noeira-bench train: model %s on %s (%zu-token vocabulary, %zu train / %zu val "
              "tokens), target %s, %s, seed %llu, batch %lld x %lld tokens, %s batches\n",
              recipe.name.c_str(), data.corpus.name.c_str(), data.corpus.vocab.size(),
              data.corpus.train.size(), data.corpus.val.size(), t.backend_description().c_str(),
              o.dtype.c_str(), static_cast<unsigned long long>(t.config().seed),
              static_cast<long long>(recipe.batch), static_cast<long long>(t.context()),
              o.host_batch ? "host-built" : "device-built");
  if (d) print_data_parallel(*group, *d, recipe.batch);
  std::printf("parameters: %lld in %zu tensors; validation on %lld fixed windows\n",
              static_cast<long long>(t.params().count()), t.params().all().size(),
              static_cast<long long>(t.eval_windows()));
  std::printf("%s", t.plan().describe().c_str());
  if (t.steps_done() > 0)
    std::printf("resumed from %s at step %lld\n", o.resume.c_str(),
                static_cast<long long>(t.steps_done()));
  if (t.steps_done() >= total)
    std::printf("nothing to do: the checkpoint already has %lld steps (asked for %lld)\n",
                static_cast<long long>(t.steps_done()), static_cast<long long>(total));
  std::fflush(stdout);

  std::vector<double> step_ms;
  EpochStats last;
  while (t.steps_done() < total) {
    const int64_t n = t.interval_steps(total);
    std::optional<Progress> progress;
    if (speaks)
      progress.emplace("steps " + std::to_string(t.steps_done() + 1) + "-" +
                       std::to_string(t.steps_done() + n));
    t.begin_epoch();
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) {
      const auto s0 = std::chrono::steady_clock::now();
      t.train_step();
      if (!o.timing_json.empty()) {  // host clock: CPU ops run synchronously
        t.synchronize();
        step_ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
      }
      if (o.check_replicas && d) {
        if (Status s = d->check_replicas(t.steps_done()); !s) return train_failed(group, s.error().message, kExitFailure);
      }
      if (progress) progress->update(i + 1, n);
      if (o.save_every > 0 && t.steps_done() % o.save_every == 0 && t.steps_done() < total) {
        if (Status s = save_lm(t, o.save, speaks); !s) return train_failed(group, s.error().message, kExitFailure);
      }
      if (!group && interrupt_requested()) break;
    }
    if (!group && interrupt_requested()) {
      if (progress) progress->finish();
      return stopped(o, t.steps_done(), [&] { return save_lm(t, o.save, true); });
    }
    t.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress) progress->finish();
    const EpochStats e = t.end_epoch(true);
    last = e;
    std::printf("step %lld/%lld  train loss %.4f (last %.4f)  val loss %.4f  %.0f tokens/s  "
                "%.2f ms/step\n",
                static_cast<long long>(t.steps_done()), static_cast<long long>(total),
                e.train_loss, e.step_losses.empty() ? 0.0 : e.step_losses.back(), e.test.loss,
                s > 0 ? static_cast<double>(n * tokens_per_step) / s : 0.0,
                1000.0 * s / static_cast<double>(n));
    std::fflush(stdout);
  }
  if (d && t.steps_done() > 0)
    std::printf("collectives: %.2f MB per step (counted over the last step)\n",
                static_cast<double>(d->comm_bytes_per_step()) / 1e6);
  if (!o.timing_json.empty()) {
    if (Status s = write_timing(o.timing_json, t, group, step_ms, last, tokens_per_step); !s)
      return train_failed(group, s.error().message, kExitFailure);
  }
  if (!o.save.empty()) {
    if (Status s = save_lm(t, o.save, speaks); !s) return train_failed(group, s.error().message, kExitFailure);
  }
  return kExitOk;
}

}  // namespace noeira
