// What every trainer shares (DatasetTrainer for image and tabular data, AutoregressiveTrainer for
// language models): the backend, the model's parameters and optimizer state in one arena per
// category, the device step counters, the one training step, the captured step, the device
// timers, checkpoints, the epoch loop, and the GradientSync that makes it data-parallel. A
// derived trainer plans its data and batch buffers, says how a step's batch is built
// (build_batch) and how it evaluates; the core does the rest.
//
// The step, written once (enqueue_step): zero the gradients (all but those their op
// overwrites: gradient_zeroing.h) -> build the batch -> forward -> loss -> backward ->
// sync.after_backward -> optimizer -> sync.after_step -> refresh the bf16 weight copies ->
// advance the device counters.
//
// An "epoch" is the unit between two read-backs of the device accumulators: a pass over
// the data set for the DatasetTrainer, an evaluation interval for the AutoregressiveTrainer.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "nn/context.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/optimizer.h"
#include "nn/training/gradient_sync.h"
#include "nn/training/gradient_zeroing.h"
#include "nn/training/trainer_config.h"

namespace noeira {

struct EvalStats {
  double loss = 0.0;  // mean per-sample (per-token for language models) loss
  double top1 = 0.0;  // percent; 0 for regression and language models
  int64_t count = 0;  // samples (tokens) evaluated
};

struct EpochStats {
  int epoch = 0;  // 1-based
  int64_t steps = 0;
  double train_loss = 0.0;
  double train_top1 = 0.0;
  EvalStats test;
  std::vector<float> step_losses;  // batch mean loss of every step of the epoch
  double seconds = 0.0;            // host wall time of the epoch's training steps
};

class TrainerCore {
 public:
  virtual ~TrainerCore();

  // Whole epochs. `on_step(step_in_epoch, steps)` runs after every step (progress output,
  // periodic checkpoints). `stop`, asked after every step but an epoch's last, ends
  // training early with the epoch left open: a checkpoint saved then resumes mid-epoch
  // (the same steps and bits as a run that was not stopped).
  std::vector<EpochStats> train(int epochs,
                                const std::function<void(const EpochStats&)>& on_epoch = {},
                                const std::function<void(int64_t, int64_t)>& on_step = {},
                                const std::function<bool()>& stop = {});
  EpochStats train_epoch(const std::function<void(int64_t, int64_t)>& on_step = {});
  // Whether the current epoch is open (begun, stopped before its end).
  bool in_epoch() const { return in_epoch_; }
  // The held-out loss (and top-1): the test set, or the fixed validation windows.
  virtual EvalStats evaluate() = 0;

  // The pieces of an epoch, for timers: begin_epoch prepares it (shuffle, counters);
  // train_step enqueues one step (no host synchronisation); end_epoch reads the
  // accumulators back and, unless told otherwise, evaluates. An epoch may end early.
  virtual void begin_epoch() = 0;
  void train_step();
  EpochStats end_epoch(bool evaluate_test = true);
  void synchronize();

  // Collective on N ranks (every rank calls it; the GradientSync decides which writes).
  Status save_checkpoint(const std::filesystem::path& path) const;
  // kResume: everything (parameters, buffers, optimizer state, step), checked against this
  // run's model, data, recipe, optimizer and dtype. kWeights: parameters and buffers only,
  // for inference (sampling): the optimizer, its schedule and the dtype may differ.
  enum class LoadMode : uint8_t { kResume, kWeights };
  Status load_checkpoint(const std::filesystem::path& path, LoadMode mode = LoadMode::kResume);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int epochs_done() const { return epoch_; }
  int64_t steps_done() const { return step_; }
  const MemoryPlan& plan() const { return plan_; }
  const ParamRegistry& params() const { return params_; }
  const TrainerConfig& config() const { return cfg_; }
  const std::string& backend_description() const { return backend_.description; }
  Ops& ops() const { return *backend_.ops; }
  Stream& stream() const { return *backend_.stream; }
  // Whether steps replay a captured CUDA graph, and why not if one was asked for.
  bool graph_active() const { return graph_ != nullptr; }
  const std::string& graph_fallback_reason() const { return graph_fallback_reason_; }
  // A timer requested in TrainerConfig::device_timers, or null (then `why` says why).
  DeviceStepTimer* device_timer(DeviceTimerKind kind, std::string* why = nullptr) const;
  // Data parallelism: the ranks that train together (1 on one process), and the strategy.
  int ranks() const { return sync_->ranks(); }
  const GradientSync& gradient_sync() const { return *sync_; }
  // Forward FLOPs of one sample as planned (PlanContext::forward_flops); a training step
  // is about 3 x this x the batch.
  double forward_flops_per_sample() const { return forward_flops_; }
  // Parameter values on the host, in registration order (for tests and the twin).
  std::vector<float> param_values(size_t index) const;

 protected:
  TrainerCore() = default;
  // The backend for cfg and the data-parallel strategy (LocalSync when null), before build.
  Status open(std::unique_ptr<Module> model, const TrainerConfig& cfg,
              std::unique_ptr<GradientSync> sync);
  // A PlanContext for the model at the top level (batch rows, tail rows for evaluation's
  // last partial batch), collecting scratch and workspace sizes into the core.
  PlanContext plan_context(int64_t tail_rows);
  // Plans the model; a PlanError becomes an Error.
  Result<Shape> plan_model(PlanContext& pc, const Shape& in);
  // After the derived trainer reserved its own buffers: the optimizer, the shared scratch
  // and workspace, counters, accumulators and a loss history of `history` steps; then
  // allocates every arena (nothing allocates after this).
  Status allocate(int64_t history);
  // After the data is uploaded: parameters, buffers, optimizer tables, counters, timers,
  // and the captured step if asked for.
  Status start();

  // The step's batch: inputs and targets, built on the device (the only per-trainer part
  // of the step). Per-step values come from the device counters.
  struct Batch {
    Tensor inputs, targets;
  };
  virtual Batch build_batch() = 0;
  // Host work before each step that a captured graph cannot hold (the host-batch
  // baseline's copy); nothing by default.
  virtual void before_step() {}
  // The epochs completed once the current one ends (end_epoch): one more by default; the
  // AutoregressiveTrainer counts whole evaluation intervals, so that a run split by a
  // resume counts the same as one that was not.
  virtual int epochs_after_end() const { return epoch_ + 1; }
  // Keys a derived trainer adds to the checkpoint header; resuming compares each of them.
  virtual nlohmann::json extra_meta() const { return nlohmann::json::object(); }

  void write_counters(int64_t batch_in_epoch = 0);
  void refresh_param_copies();
  // Reads the LossStats at `slot` back: mean loss, top-1 percent (0 unless classification).
  EvalStats read_stats(const Slot& slot) const;
  static EvalStats stats_of(const LossStats& st, Task task);

  TrainerConfig cfg_;
  Backend backend_;
  std::unique_ptr<Module> model_;
  std::unique_ptr<Loss> loss_;
  std::unique_ptr<Optimizer> optimizer_;
  MemoryPlan plan_;
  ParamRegistry params_;
  Arenas arenas_;
  std::unique_ptr<Context> ctx_;
  std::string dataset_name_;  // goes into checkpoints
  int64_t steps_per_epoch_ = 0;
  Slot scratch_;    // shared fp32 scratch (bf16 GEMM results)
  Slot workspace_;  // shared op workspace (convolutions, BatchNorm, attention)
  Slot counters_, train_stats_, eval_stats_, loss_history_;

  int epoch_ = 0;      // epochs completed
  int64_t step_ = 0;   // optimizer steps taken (host mirror of the device counter)
  int64_t epoch_first_step_ = 0;
  double epoch_seconds_ = 0.0;
  // A checkpoint saved mid-epoch: the batches of its epoch already taken. The classifier's
  // begin_epoch continues the epoch's batch order from there (and its loss history from
  // that index, history_offset_); the AutoregressiveTrainer's windows follow the step,
  // so it ignores it.
  int64_t resume_batch_ = 0;
  int64_t history_offset_ = 0;
  bool in_epoch_ = false;
  std::unique_ptr<GradientSync> sync_;
  // What the GradientSync sees of this trainer (the arenas once allocated).
  SyncTarget sync_target() const;
  // Floats of the parameter (and gradient) arena as laid out, padding included (a multiple
  // of the sync's pad_multiple()), whatever the sync's plan made of the allocation.
  int64_t padded_params_ = 0;
  // The runs of the gradient arena the step zeroes (gradient_zeroing.h), planned once.
  std::vector<ByteRange> grad_zeroing_;

 private:
  // One training step, enqueued (the skeleton above).
  void enqueue_step();
  Status capture_step();
  // One epoch, or none (an empty result) when `stop` ended it early.
  std::optional<EpochStats> run_epoch(const std::function<void(int64_t, int64_t)>& on_step,
                                      const std::function<bool()>& stop);
  void initialise_params();
  void initialise_buffers();
  nlohmann::json checkpoint_meta() const;
  // The checkpoint of this rank's view of the state, gathered through the sync.
  Status write_checkpoint_file(const std::filesystem::path& path, const SyncTarget& target) const;

  int64_t scratch_elems_ = 0;
  int64_t cross_rank_doubles_ = 0;  // PlanContext::need_cross_rank_doubles
  Slot cross_rank_;                 // (cross_rank_doubles_) when the sync sums over ranks
  double forward_flops_ = 0.0;
  size_t workspace_bytes_ = 0;
  Slot reduction_ws_;
  size_t reduction_bytes_ = 0;
  std::unique_ptr<StepGraph> graph_;
  std::string graph_fallback_reason_;
  struct TimerSlot {
    DeviceTimerKind kind;
    std::unique_ptr<DeviceStepTimer> timer;
    std::string why;
  };
  std::vector<TimerSlot> timers_;
};

}  // namespace noeira
