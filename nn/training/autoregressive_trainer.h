// The AutoregressiveTrainer trains a language model (input (T) int32 ids, output (T, V)
// logits) on a resident token corpus. Each step's batch is built on the device by one op
// (Ops::batch_windows: row r's window start from Philox(seed, step, r), the step read from
// the device counters), so a captured step replays with the next step's windows. The
// host-batch baseline builds the same windows on the host (fill_batch_windows) and copies
// them in before the step. Validation is the mean per-token loss over fixed windows of the
// validation split (kernels/common/batch_window.h), the same every evaluation.
//
// An epoch here is an evaluation interval: steps_per_epoch() = eval_interval; the
// intervals are aligned to multiples of it (interval_steps), also after a resume.
#pragma once
#include <memory>
#include <vector>

#include "nn/training/token_corpus.h"
#include "nn/training/trainer_core.h"

namespace noeira {

struct AutoregressiveConfig {
  int64_t context = 0;  // T: tokens per training window (<= the model's context)
  int64_t eval_interval = 250;
  int64_t eval_windows = 0;  // cap on the validation windows (0 = every one that fits)
  bool host_batch = false;   // build batches on the host (the baseline) instead of the device
};

class AutoregressiveTrainer final : public TrainerCore {
 public:
  // sync: the data-parallel strategy (null: one process); rank r of N trains rows r*B ..
  // r*B + B - 1 of each step's N*B windows (Ops::batch_windows' first_row).
  static Result<std::unique_ptr<AutoregressiveTrainer>> create(
      std::unique_ptr<Module> model, const TrainerConfig& cfg, const AutoregressiveConfig& lm,
      const TokenCorpus& corpus, std::unique_ptr<GradientSync> sync = nullptr);
  ~AutoregressiveTrainer() override;

  EvalStats evaluate() override;  // loss per token over the validation windows
  void begin_epoch() override;
  // Steps from here to the next multiple of eval_interval, at most total - steps_done().
  int64_t interval_steps(int64_t total) const;

  int64_t context() const { return T_; }
  int64_t vocab() const { return V_; }
  int64_t eval_windows() const { return n_windows_; }
  const std::vector<char>& vocabulary() const { return vocab_; }
  // Logits (V) of the position after `window` (1 <= size <= context), in eval mode: the
  // model sees the window at positions 0.. (causal, so what follows it does not matter).
  // Synchronises; for sampling, not for training.
  std::vector<float> next_token_logits(const std::vector<int32_t>& window);
  // The batch the next step trains on, (B, T) inputs and targets, as the device built it
  // (device batch: after a step, the batch of the step just taken). For tests.
  void read_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets) const;

 private:
  AutoregressiveTrainer() = default;
  Status build(const AutoregressiveConfig& lm, const TokenCorpus& corpus);
  Batch build_batch() override;
  void before_step() override;
  int epochs_after_end() const override {
    return static_cast<int>(step_ / lm_.eval_interval);
  }
  nlohmann::json extra_meta() const override;

  AutoregressiveConfig lm_;
  int64_t T_ = 0, V_ = 0, n_train_ = 0, n_val_ = 0, n_windows_ = 0;
  int64_t first_row_ = 0;  // this rank's first row of the global batch
  std::vector<char> vocab_;
  Slot train_ids_, val_ids_;     // the resident corpus splits, int32
  Slot batch_x_, batch_y_;       // (B, T) int32 inputs and targets
  Slot logits_row_;              // (V) fp32: next_token_logits' read-back
  std::vector<int32_t> host_train_, host_x_, host_y_;  // host-batch baseline only
};

}  // namespace noeira
