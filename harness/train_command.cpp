#include "harness/train_command.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <memory>
#include <optional>

#include "harness/cli.h"
#include "harness/cli_options.h"
#include "harness/interrupt.h"
#include "harness/progress.h"
#include "harness/session.h"
#include "harness/stats.h"
#include "nn/atomic_file.h"
#if defined(NOEIRA_WITH_MPI)
#include "dist/mpi_communicator.h"
#if defined(NOEIRA_WITH_NCCL)
#include "dist/nccl_communicator.h"
#endif
#endif

namespace noeira {

namespace {

struct TrainOptions {
  std::string model = "mlp";
  int epochs = 0;  // 0 = the recipe's
  int64_t steps = 0;  // the gpt family: 0 = the recipe's
  bool host_batch = false;
  uint64_t seed = 0;
  DataOptions data;
  std::string save, resume;
  int64_t save_every = 0;  // steps between checkpoints to `save` (0: only at the end)
  int threads = 0;
  std::string target = "cpu";
  std::string dtype = "fp32";
  bool graph = false;
  int zero = -1;  // the gpt family over MPI ranks: ZeRO stage (0 = DDP); -1 = one process
  bool check_replicas = false;
  int64_t batch = 0;  // 0 = the recipe's
  std::string timing_json;  // the scaling benchmark's per-run summary (rank 0 writes it)
};

// Data parallelism: a communicator when the run is distributed (--zero, or started by
// mpirun with more than one rank), else null. Only rank 0 prints; a rank that fails ends
// the whole job (Communicator::abort), so no rank waits forever in a collective.
struct Distributed {
#if defined(NOEIRA_WITH_MPI)
  std::unique_ptr<MpiCommunicator> comm;
  // --target gpu: NCCL between the GPUs, bootstrapped over comm; null on the CPU.
  std::unique_ptr<Communicator> device_comm;
  // The engine the trainer's collectives use.
  Communicator& engine() const { return device_comm ? *device_comm : *comm; }
#endif
  bool active() const {
#if defined(NOEIRA_WITH_MPI)
    return comm != nullptr;
#else
    return false;
#endif
  }
  // This process's rank (0 on one process): only rank 0 prints.
  int rank() const {
#if defined(NOEIRA_WITH_MPI)
    return comm ? comm->rank() : 0;
#else
    return 0;
#endif
  }
  int fail(const std::string& message, int code) const {
    report_error(message, code);
#if defined(NOEIRA_WITH_MPI)
    if (comm) {
      std::fflush(nullptr);
      comm->abort(code);
    }
#endif
    return code;
  }
};

// The scaling benchmark's summary of one run (harness/scaling_runner.h reads it): every
// rank's median step time (after the first 3 steps), tokens/s over the global batch, the
// collectives' bytes per step and each rank's parameter, gradient and optimizer bytes.
// Collective under MPI; rank 0 writes (atomically).
Status write_timing(const std::string& path, const AutoregressiveTrainer& t,
                    const Distributed& dist, std::vector<double> step_ms, const EpochStats& last,
                    int64_t tokens_per_step) {
  if (step_ms.size() > 3) step_ms.erase(step_ms.begin(), step_ms.begin() + 3);
  const double mine = step_ms.empty() ? 0.0 : median(step_ms);
  std::vector<double> per_rank(static_cast<size_t>(t.ranks()), 0.0);
  const int rank = dist.rank();
  int zero = -1;
  int64_t comm_bytes = 0;
  std::string engine = "none (one process)";
#if defined(NOEIRA_WITH_MPI)
  if (dist.active()) {
    const auto& d = static_cast<const DistributedAutoregressiveTrainer&>(t);
    zero = d.zero_stage();
    comm_bytes = d.comm_bytes_per_step();
    engine = dist.engine().engine();
  }
#else
  (void)dist;
#endif
  per_rank[static_cast<size_t>(rank)] = mine;
#if defined(NOEIRA_WITH_MPI)
  if (dist.active()) dist.comm->all_sum(per_rank.data(), static_cast<int64_t>(per_rank.size()));
#endif
  if (rank != 0) return {};
  const double slowest = *std::max_element(per_rank.begin(), per_rank.end());
  const MemoryPlan& plan = t.plan();
  const nlohmann::json j = {
      {"ranks", t.ranks()},
      {"zero", zero},
      {"engine", engine},
      {"steps_timed", step_ms.size()},
      {"per_rank_median_step_ms", per_rank},
      {"step_ms", slowest},  // a step ends when the slowest rank's does
      {"tokens_per_step", tokens_per_step},
      {"tokens_per_s", slowest > 0 ? 1000.0 * static_cast<double>(tokens_per_step) / slowest : 0.0},
      {"comm_bytes_per_step", comm_bytes},
      {"bytes_per_rank",
       {{"parameters", plan.bytes(MemCategory::kParams)},
        {"gradients", plan.bytes(MemCategory::kGrads)},
        {"optimizer_state", plan.bytes(MemCategory::kOptimState)}}},
      {"final_train_loss", last.train_loss},
      {"final_val_loss", last.test.loss}};
  return write_file_atomically(path, j.dump(2) + "\n", "the timing summary");
}

[[maybe_unused]] const char* zero_stage_summary(int stage) {
  switch (stage) {
    case 0: return "DDP: reduce-scatter + all-gather of gradients";
    case 1: return "ZeRO-1: Adam state per slice, parameters all-gathered";
    case 2: return "ZeRO-2: Adam state and gradients per slice, buckets reduced during backward";
    default: return "ZeRO-3: Adam state, gradients and parameters per slice, layers gathered";
  }
}

// Started by mpirun (Open MPI, or a PMI launcher) with more than one rank.
bool launched_under_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
  return false;
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

// Ctrl-C during training: the state after the last whole step goes to --save (if given),
// so that --resume continues exactly; the exit code says which signal stopped it.
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

// The gpt family: steps, not epochs; a line per evaluation interval with the train loss,
// the validation loss and the throughput.
int run_train_lm(const TrainOptions& o, const Recipe& recipe, const DataSplit& data,
                 TrainerOptions to) {
  const int64_t total = o.steps > 0 ? o.steps : recipe.gpt.steps;
  // The schedule spans the recipe's steps (or more, if asked for more), whatever --steps
  // stops at: a run stopped at step N and resumed ends exactly as one uninterrupted run.
  to.total_steps = std::max(total, recipe.gpt.steps);
  to.host_batch = o.host_batch;
  Distributed dist;
  std::unique_ptr<AutoregressiveTrainer> owned;
#if defined(NOEIRA_WITH_MPI)
  if (o.zero >= 0 || launched_ranks() > 1) {
    Result<std::unique_ptr<MpiCommunicator>> comm = MpiCommunicator::create();
    if (!comm) return report_error(comm.error().message, kExitFailure);
    dist.comm = std::move(comm).value();
    // Rank 0 alone prints; the others keep stderr for their errors.
    if (dist.comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
      return dist.fail("cannot silence rank " + std::to_string(dist.comm->rank()), kExitFailure);
    if (to.device == Device::kGpu) {
#if defined(NOEIRA_WITH_NCCL)
      Result<std::unique_ptr<NcclCommunicator>> nccl = NcclCommunicator::create(*dist.comm);
      if (!nccl) return dist.fail(nccl.error().message, kExitFailure);
      dist.device_comm = std::move(nccl).value();
#else
      return dist.fail("--target gpu with data parallelism needs NCCL (nccl.h and libnccl "
                       "next to the CUDA toolkit) in the build", kExitFailure);
#endif
    }
    Result<std::unique_ptr<DistributedAutoregressiveTrainer>> made =
        make_distributed_lm_trainer(recipe, data, to, dist.engine(), std::max(o.zero, 0));
    if (!made) return dist.fail(made.error().message, kExitFailure);
    owned = std::move(made).value();
  }
#else
  if (o.zero >= 0)
    return report_error("--zero: this build has no MPI (install libopenmpi-dev with "
                        "scripts/setup and rebuild)", kExitUsage);
#endif
  if (!owned) {
    Result<std::unique_ptr<AutoregressiveTrainer>> made = make_lm_trainer(recipe, data, to);
    if (!made) return report_error(made.error().message, kExitFailure);
    owned = std::move(made).value();
  }
  AutoregressiveTrainer& t = *owned;
  const bool speaks = dist.rank() == 0;
  if (!o.resume.empty()) {
    if (Status s = t.load_checkpoint(o.resume); !s) return dist.fail(s.error().message, kExitFailure);
  }
  const int64_t tokens_per_step = recipe.batch * t.context() * t.ranks();
  std::printf("noeira-bench train: model %s on %s (%zu-token vocabulary, %zu train / %zu val "
              "tokens), target %s, %s, seed %llu, batch %lld x %lld tokens, %s batches\n",
              recipe.name.c_str(), data.corpus.name.c_str(), data.corpus.vocab.size(),
              data.corpus.train.size(), data.corpus.val.size(), t.backend_description().c_str(),
              o.dtype.c_str(), static_cast<unsigned long long>(t.config().seed),
              static_cast<long long>(recipe.batch), static_cast<long long>(t.context()),
              o.host_batch ? "host-built" : "device-built");
#if defined(NOEIRA_WITH_MPI)
  if (dist.active()) {
    const auto& d = static_cast<const DistributedAutoregressiveTrainer&>(t);
    std::printf("data parallel: %d ranks over %s, ZeRO stage %d (%s), global batch %lld rows; "
                "%lld padded parameter floats, %lld per rank's slice\n",
                t.ranks(), dist.engine().engine().c_str(), d.zero_stage(),
                zero_stage_summary(d.zero_stage()),
                static_cast<long long>(recipe.batch * t.ranks()),
                static_cast<long long>(d.padded_params()), static_cast<long long>(d.slice()));
    if (const LayerShards* sh = d.shards(); sh && d.zero_stage() >= 2)
      std::printf("ZeRO-%d per rank: %s = slice %lld + resident bucket %lld + layer window %lld "
                  "floats (+ alignment), %zu buckets\n",
                  d.zero_stage(), d.zero_stage() >= 3 ? "parameters and gradients" : "gradients",
                  static_cast<long long>(d.slice()), static_cast<long long>(sh->buckets()[0].count),
                  static_cast<long long>(sh->window_floats()), sh->buckets().size());
  }
#endif
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
#if defined(NOEIRA_WITH_MPI)
      if (o.check_replicas && dist.active()) {
        auto& d = static_cast<DistributedAutoregressiveTrainer&>(t);
        if (Status s = d.check_replicas(); !s) return dist.fail(s.error().message, kExitFailure);
      }
#endif
      if (progress) progress->update(i + 1, n);
      if (o.save_every > 0 && t.steps_done() % o.save_every == 0 && t.steps_done() < total) {
        if (Status s = save_lm(t, o.save, speaks); !s) return dist.fail(s.error().message, kExitFailure);
      }
      if (!dist.active() && interrupt_requested()) break;
    }
    if (!dist.active() && interrupt_requested()) {
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
#if defined(NOEIRA_WITH_MPI)
  if (dist.active() && t.steps_done() > 0)
    std::printf("collectives: %.2f MB per step (counted over the last step)\n",
                static_cast<double>(
                    static_cast<const DistributedAutoregressiveTrainer&>(t).comm_bytes_per_step()) /
                    1e6);
#endif
  if (!o.timing_json.empty()) {
    if (Status s = write_timing(o.timing_json, t, dist, step_ms, last, tokens_per_step); !s)
      return dist.fail(s.error().message, kExitFailure);
  }
  if (!o.save.empty()) {
    if (Status s = save_lm(t, o.save, speaks); !s) return dist.fail(s.error().message, kExitFailure);
  }
  return kExitOk;
}

int run_train(const TrainOptions& o) {
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  const bool lm = recipe->family == "gpt";
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
                  "Rows per step (per rank with --zero; default: the recipe's)")
      ->check(CLI::PositiveNumber);
  return [cmd, o]() {
    if (!cmd->parsed()) return -1;
    if (o->save_every > 0 && o->save.empty())
      return report_error("--save-every writes the --save checkpoint: add --save PATH", kExitUsage);
    // One process stops cleanly on Ctrl-C; ranks under mpirun keep the default (a rank
    // stopping alone would leave the others waiting in a collective).
    if (o->zero < 0 && !launched_under_mpirun()) install_interrupt_handlers();
    return run_train(*o);
  };
}

}  // namespace noeira
