// The Trainer owns a model's parameters, optimizer state, loss and the resident data
// sets. It plans every buffer once, allocates one arena per category, uploads the data
// once, and then trains with batches gathered on the device from a Philox permutation.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/amp.h"
#include "nn/backend.h"
#include "nn/context.h"
#include "nn/init.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/optimizer.h"
#include "nn/training/augmenter.h"
#include "nn/training/tensor_dataset.h"

namespace noeira {

struct TrainerConfig {
  Device device = Device::kCpu;
  int threads = 0;  // CPU: 0 = every core this process may use
  uint64_t seed = 0;
  int64_t batch = 128;
  bool drop_last = true;
  Task task = Task::kClassification;
  OptimizerConfig optimizer;
  InitConfig init;
  AmpPolicy amp = NoAMP;
  // Random crop + flip of the training images before every epoch (nn/training/augmenter.h);
  // its count and image shape are filled in from the data set.
  std::optional<AugmentSpec> augment;
  bool use_train_cuda_graph = false;
  bool graph_fallback = false;   // if capture fails: run eager (true) or fail create (false)
  // Device step timers to create before any capture (CUPTI must be enabled first).
  std::vector<DeviceTimerKind> device_timers;
  std::string model_name;        // goes into checkpoints
  nlohmann::json recipe;         // hashed into checkpoints; resuming checks it
};

struct EvalStats {
  double loss = 0.0;  // mean per-sample loss
  double top1 = 0.0;  // percent; 0 for regression
  int64_t count = 0;
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

// Training steps in one epoch of `count` samples (the last partial batch dropped when
// drop_last says so).
constexpr int64_t epoch_steps(int64_t count, int64_t batch, bool drop_last) {
  return drop_last ? count / batch : (count + batch - 1) / batch;
}

class Trainer {
 public:
  static Result<std::unique_ptr<Trainer>> create(std::unique_ptr<Module> model,
                                                 const TrainerConfig& cfg,
                                                 const TensorDataset& train,
                                                 const TensorDataset& test);
  ~Trainer();

  // Whole epochs. `on_step(step_in_epoch, steps)` is for progress output only.
  std::vector<EpochStats> train(int epochs,
                                const std::function<void(const EpochStats&)>& on_epoch = {},
                                const std::function<void(int64_t, int64_t)>& on_step = {});
  EpochStats train_epoch(const std::function<void(int64_t, int64_t)>& on_step = {});
  EvalStats evaluate();
  double eval_top1() { return evaluate().top1; }

  // The pieces of an epoch, for timers: begin_epoch shuffles; train_step enqueues one
  // batch (no host synchronisation); end_epoch reads the accumulators back and, unless
  // told otherwise, evaluates on the test set. An epoch may end early (a step budget).
  void begin_epoch();
  void train_step();
  EpochStats end_epoch(bool evaluate_test = true);
  void synchronize();

  Status save_checkpoint(const std::filesystem::path& path) const;
  Status load_checkpoint(const std::filesystem::path& path);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int epochs_done() const { return epoch_; }
  int64_t steps_done() const { return step_; }
  const MemoryPlan& plan() const { return plan_; }
  const ParamRegistry& params() const { return params_; }
  const TrainerConfig& config() const { return cfg_; }
  const std::string& backend_description() const { return backend_.description; }
  Ops& ops() const { return *backend_.ops; }
  // Whether steps replay a captured CUDA graph, and why not if one was asked for.
  bool graph_active() const { return graph_ != nullptr; }
  const std::string& graph_fallback_reason() const { return graph_fallback_reason_; }
  // A timer requested in TrainerConfig::device_timers, or null (then `why` says why).
  DeviceStepTimer* device_timer(DeviceTimerKind kind, std::string* why = nullptr) const;
  // Parameter values on the host, in registration order (for tests and the twin).
  std::vector<float> param_values(size_t index) const;

 private:
  Trainer() = default;
  Status build(const TensorDataset& train, const TensorDataset& test);
  void upload(const TensorDataset& d, const Slot& x, const Slot& y);
  void initialise_params();
  void initialise_buffers();
  Tensor batch_targets(const Slot& y, int64_t first, int64_t rows) const;
  nlohmann::json checkpoint_meta() const;
  void write_counters();
  void refresh_param_copies();
  void enqueue_step();
  Status capture_step();

  TrainerConfig cfg_;
  Backend backend_;
  std::unique_ptr<Module> model_;
  std::unique_ptr<Loss> loss_;
  std::unique_ptr<Optimizer> optimizer_;
  MemoryPlan plan_;
  ParamRegistry params_;
  Arenas arenas_;
  std::unique_ptr<Context> ctx_;

  Shape sample_shape_, out_shape_, target_shape_;
  std::string dataset_name_;
  int64_t train_count_ = 0, test_count_ = 0, steps_per_epoch_ = 0;
  Slot train_x_, train_y_, test_x_, test_y_;  // the resident data sets
  Slot batch_x_, batch_y_;                    // (B, sample...) flow dtype, (B, target...)
  Slot scratch_;                              // shared fp32 scratch (bf16 GEMM results)
  Slot workspace_;                            // shared op workspace (convolutions, BatchNorm)
  std::unique_ptr<Augmenter> augmenter_;      // null when the recipe does not augment
  Slot perm_, shuffle_ws_;
  Slot counters_, train_stats_, eval_stats_, loss_history_;

  std::unique_ptr<StepGraph> graph_;
  std::string graph_fallback_reason_;
  struct TimerSlot {
    DeviceTimerKind kind;
    std::unique_ptr<DeviceStepTimer> timer;
    std::string why;
  };
  std::vector<TimerSlot> timers_;

  int epoch_ = 0;      // epochs completed
  int64_t step_ = 0;   // optimizer steps taken (host mirror of the device counter)
  int64_t epoch_first_step_ = 0;
  double epoch_seconds_ = 0.0;
};

}  // namespace noeira
