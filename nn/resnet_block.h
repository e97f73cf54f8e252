// ResNet's basic block (He et al. 2016, the CIFAR ResNet-20/32/... variant):
//   out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
// conv1 3x3 with the block's stride, conv2 3x3 stride 1, both padded by 1 and without
// bias. The shortcut is the identity when the shape is kept, else option A: subsample by
// the stride and pad the new channels with zeros (kernels/common/image_shapes.h
// ShortcutShape), no parameters. Children (and their parameter names, in registration
// order): conv1.weight, bn1.weight, bn1.bias, conv2.weight, bn2.weight, bn2.bias, plus the
// buffers bn1.running_mean/var, bn2.running_mean/var.
#pragma once
#include <memory>

#include "kernels/common/image_shapes.h"
#include "nn/batchnorm.h"
#include "nn/conv2d.h"
#include "nn/module.h"

namespace noeira {

class BasicBlock : public Module {
 public:
  BasicBlock(int64_t out_channels, int64_t stride);
  std::string kind() const override { return "BasicBlock"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

  // Two blocks in a row: `after`'s input is `before`'s output, a ReLU's. `after`'s conv1
  // writes the block's d(input) through that ReLU (conv2d_backward's dx epilogue: the
  // shortcut's add and the ReLU's gradient in its copy of d(input), add then act_backward's
  // bits), and `before` takes the gradient it receives as d(its sum) without its own
  // act_backward: the add's and the ReLU gradient's passes over the activations saved. Set
  // by the model builder (models/resnet.cpp), before planning.
  static void chain(BasicBlock& before, BasicBlock& after);

 private:
  int64_t out_, stride_;
  std::unique_ptr<Conv2d> conv1_, conv2_;
  std::unique_ptr<BatchNorm2d> bn1_, bn2_;  // each with its ReLU fused into its forward
  bool identity_ = true;    // the shortcut is x itself
  ShortcutShape shortcut_;  // option A, when not the identity
  Slot x_cast_;             // (B, Cin, H, W) flow dtype: an input in another dtype, cast
  Slot sc_, dsum_;          // (B, Cout, Ho, Wo): shortcut, d(bn2 + shortcut) (not when chained)
  Slot drelu_;              // (B, Cout, Ho, Wo): d(relu(bn1)'s input), synchronised BN only
  Slot dsc_;                // (B, Cin, H, W) flow dtype: d(input) through the shortcut
  Slot dxf_, dx_;           // (B, Cin, H, W): d(input) in the flow dtype (when it differs),
                            // input's (not when chained: conv1's)
  Tensor xf_;               // input of the last forward, in the flow dtype
  Tensor h1_, y_;           // the last forward's relu(bn1) and output (bn2's buffers)
  int64_t rows_ = 0;
  bool dy_through_relu_ = false;     // the block after took this block's output ReLU (chain)
  bool dx_through_in_relu_ = false;  // d(input) leaves through the ReLU that made the input
  bool planned_ = false;
};

}  // namespace noeira
