// BatchNorm2d over NCHW images (torch's semantics, kernels/common/norm.h): training
// normalises by the batch's per-channel statistics and updates the running ones (mean and
// unbiased variance, weighted by momentum); evaluation normalises by the running ones.
// gamma ("weight", starts at 1) and beta ("bias", starts at 0) are fp32 parameters; the
// running statistics are fp32 buffers saved in checkpoints; the output keeps the input's
// dtype, the statistics are computed in double/fp32 whatever it is.
//
// Synchronised over ranks (data parallelism: the Context carries a CrossRankSum): training
// adds its channel sums over the ranks before it normalises, forward (sum x, sum x^2) and
// backward (sum dy, sum dy * xhat), so N ranks of B rows each normalise and back-propagate
// as one process with N * B rows (every rank has B rows). dgamma and dbeta take this rank's
// own sums: the gradient sync averages the ranks' gradients. On one process the fused ops
// run, as before.
//
// A caller may fuse what follows into the forward's pass (kernels/ops.h BatchNormEpilogue):
// y = act(bn(x) + residual), with the separate ops' bits (ResNet's basic block: relu(bn1)
// and relu(bn2 + shortcut)). backward() stays BatchNorm's own: dy is the gradient of the
// normalised value, so the caller takes the activation's and the residual's gradients;
// behind a ReLU alone, backward_through_relu takes ReLU's too.
//
// With a fused ReLU (with_relu(): a recipe's "batchnorm2d" followed by "relu", merged by the
// model builder, models/mlp.cpp) the module is both layers: forward writes relu(bn(x))
// in BatchNorm's pass and backward takes ReLU's gradient in BatchNorm's (synchronised:
// act_backward into its own buffer, then BatchNorm's), the two layers' bits without their
// two extra passes over the activations.
#pragma once
#include "kernels/common/image_shapes.h"
#include "kernels/common/math.h"
#include "kernels/common/norm.h"
#include "nn/module.h"

namespace noeira {

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(float eps = 1e-5f, float momentum = 0.1f) : hyper_{eps, momentum} {}
  std::string kind() const override { return relu_ ? "BatchNorm2d+ReLU" : "BatchNorm2d"; }
  // Takes the ReLU that follows; the model builder's, before plan() (which plans for it).
  void with_relu();
  bool has_relu() const { return relu_; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  // y = act(bn(x) + residual), residual empty or x's shape and dtype.
  Tensor forward(Context& ctx, const Tensor& x, const Tensor& residual, Act act);
  Tensor backward(Context& ctx, const Tensor& dy) override;
  // After forward(ctx, x, {}, Act::kReLU) only, unsynchronised (fuses_relu_backward): dy is
  // the gradient at that forward's output relu_post, and ReLU's gradient is taken in
  // BatchNorm's own passes (batchnorm_relu_backward): act_backward + backward()'s bits.
  bool fuses_relu_backward(const Context& ctx) const { return ctx.cross_rank_sum() == nullptr; }
  Tensor backward_through_relu(Context& ctx, const Tensor& dy, const Tensor& relu_post);

 private:
  NormShape shape(int64_t rows) const { return NormShape{rows, shape_.channels, shape_.spatial}; }
  void forward_synced(Context& ctx, CrossRankSum& ranks, const Tensor& x, const Tensor& y,
                      const BatchNormEpilogue& epi);
  void backward_synced(Context& ctx, CrossRankSum& ranks, const Tensor& dy, const Tensor& dx);

  BatchNormHyper hyper_;
  bool relu_ = false;  // a fused ReLU after the normalisation
  bool planned_ = false;
  NormShape shape_;
  ParamRef gamma_, beta_;
  Slot running_mean_, running_var_;  // (C) in kBuffers
  Slot save_mean_, save_invstd_;     // (C): the last training forward's batch statistics
  Slot y_, dx_;                      // (B, C, H, W), in the input's dtype
  // (B, C, H, W): with relu_, ReLU's gradient where BatchNorm is synchronised (planned
  // whenever relu_ is: a plan does not know whether its run will be)
  Slot drelu_;
  Tensor x_;
};

}  // namespace noeira
