// Losses fuse the forward and the gradient: one pass writes the batch loss into the
// device accumulators and d(output) into the loss's own buffer.
#pragma once
#include <memory>
#include <string>

#include "nn/module.h"

namespace noeira {

// kLanguageModel: softmax cross-entropy over the vocabulary at every position, reported as
// a mean per-token loss (no top-1).
enum class Task : uint8_t { kClassification, kRegression, kLanguageModel };

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string kind() const = 0;
  // Per-sample target shape and dtype for a per-sample output shape.
  virtual Shape target_shape(const Shape& out) const = 0;
  virtual DType target_dtype() const = 0;
  void plan(PlanContext& pc, const Shape& out);
  // Adds the batch to *stats (and its mean to history[batch_in_epoch] if history is
  // set); with_grad also writes and returns d(loss)/d(out) for the batch mean loss.
  virtual Tensor run(Context& ctx, const Tensor& out, const Tensor& target, LossStats* stats,
                     float* history, bool with_grad) = 0;

 protected:
  Slot dout_;
};

// Stable softmax + cross-entropy over the last dimension; targets are int32 classes. With
// label smoothing eps (torch's label_smoothing) the target is (1 - eps) onehot + eps / K,
// in training and evaluation alike (as a torch loss module is used for both).
class SoftmaxCrossEntropy final : public Loss {
 public:
  explicit SoftmaxCrossEntropy(float label_smoothing = 0.0f)
      : label_smoothing_(label_smoothing) {}
  std::string kind() const override { return "softmax_cross_entropy"; }
  Shape target_shape(const Shape&) const override { return Shape{}; }
  DType target_dtype() const override { return DType::kI32; }
  Tensor run(Context& ctx, const Tensor& out, const Tensor& target, LossStats* stats,
             float* history, bool with_grad) override;

 private:
  float label_smoothing_;
};

// Mean squared error over every output element; targets have the output's shape.
class MeanSquaredError final : public Loss {
 public:
  std::string kind() const override { return "mse"; }
  Shape target_shape(const Shape& out) const override { return out; }
  DType target_dtype() const override { return DType::kF32; }
  Tensor run(Context& ctx, const Tensor& out, const Tensor& target, LossStats* stats,
             float* history, bool with_grad) override;
};

// label_smoothing: softmax cross-entropy only (classification and language models).
std::unique_ptr<Loss> make_loss(Task task, float label_smoothing = 0.0f);

}  // namespace noeira
