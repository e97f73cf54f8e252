// 2-D convolution y = act(conv(x, W) + b) over NCHW images, W: (Cout, Cin, k, k) as torch
// stores it. The optional activation runs after the convolution into its own buffer.
#pragma once
#include "kernels/common/image_shapes.h"
#include "kernels/common/math.h"
#include "kernels/ops.h"
#include "nn/module.h"

namespace noeira {

class Conv2d : public Module {
 public:
  Conv2d(int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t pad = 0,
         bool bias = true, Act act = Act::kNone)
      : out_(out_channels), kernel_(kernel), stride_(stride), pad_(pad), has_bias_(bias),
        act_(act) {}
  std::string kind() const override;
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;
  // backward with d(input) written through `epi` (kernels/ops.h ConvDxEpilogue: the
  // gradient of a sum through a ReLU, ResNet's chained blocks), in the convolution's own
  // pass over it. Needs a d(input) in the flow dtype (an input that needs its gradient and
  // was not cast).
  Tensor backward(Context& ctx, const Tensor& dy, const ConvDxEpilogue& epi);

 private:
  ConvShape shape(int64_t rows) const;
  ConstView weight(const Context& ctx) const;

  int64_t out_, kernel_, stride_, pad_;
  bool has_bias_;
  Act act_;
  ConvShape shape_;     // for the planned batch; forward sets the rows it is called with
  bool bf16_ = false;   // BF16Policy: bf16 activations and weight copy
  ParamRef weight_, bias_;
  Slot z_, y_, dz_;     // (B, Cout, Ho, Wo): conv output; with an activation, its output
                        // and the gradient before it
  Slot x_cast_;         // (B, Cin, H, W) bf16: an fp32 input cast at the boundary
  Slot dx_low_, dx_;    // (B, Cin, H, W): d(input) in the flow dtype, then in the input's
  Tensor x_;            // input of the last forward, in the flow dtype
  int64_t rows_ = 0;
};

}  // namespace noeira
