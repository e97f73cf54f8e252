// The DatasetTrainer (image and tabular data) keeps the resident data sets and trains with
// batches gathered on the device from a Philox permutation; the rest of training —
// arenas, optimizer, the step, captured step, checkpoints — is the TrainerCore's.
//
// Data parallel over N ranks (a GradientSync of N ranks): an epoch has count / (N*B)
// global batches; batch b of rank r is rows perm[b*N*B + r*B .. b*N*B + r*B + B - 1], so
// the N ranks together see one process's epoch with an N-times batch.
#pragma once
#include <memory>

#include "nn/training/tensor_dataset.h"
#include "nn/training/trainer_core.h"

namespace noeira {

// Training steps in one epoch of `count` samples (the last partial batch dropped when
// drop_last says so).
constexpr int64_t epoch_steps(int64_t count, int64_t batch, bool drop_last) {
  return drop_last ? count / batch : (count + batch - 1) / batch;
}

class DatasetTrainer final : public TrainerCore {
 public:
  // sync: the data-parallel strategy (null: one process).
  static Result<std::unique_ptr<DatasetTrainer>> create(std::unique_ptr<Module> model,
                                                        const TrainerConfig& cfg,
                                                        const TensorDataset& train,
                                                        const TensorDataset& test,
                                                        std::unique_ptr<GradientSync> sync = nullptr);
  ~DatasetTrainer() override;

  // The test set, in batches (the last one partial).
  EvalStats evaluate() override;
  double eval_top1() { return evaluate().top1; }
  // Shuffles (and augments) for the next epoch.
  void begin_epoch() override;

 private:
  DatasetTrainer() = default;
  Status build(const TensorDataset& train, const TensorDataset& test);
  void upload(const TensorDataset& d, const Slot& x, const Slot& y);
  Tensor batch_targets(const Slot& y, int64_t first, int64_t rows) const;
  Batch build_batch() override;

  Shape sample_shape_, out_shape_, target_shape_;
  int64_t train_count_ = 0, test_count_ = 0;
  Slot train_x_, train_y_, test_x_, test_y_;  // the resident data sets
  Slot batch_x_, batch_y_;                    // (B, sample...) flow dtype, (B, target...)
  std::unique_ptr<Augmenter> augmenter_;      // null when the recipe does not augment
  Slot perm_, shuffle_ws_;
  // Data parallel only: the permutation rows of this rank's batches, its batches' order,
  // and counters at zero for that gather.
  Slot rank_rows_, rank_order_, zero_counters_;
};

}  // namespace noeira
