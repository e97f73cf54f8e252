// Pooling over NCHW images: MaxPool2d, AvgPool2d (padding counted as zeros, torch's
// count_include_pad=True) and GlobalAvgPool ((B, C, H, W) -> (B, C, 1, 1)). Outputs keep
// the input's dtype: pooling computes in fp32 and stores what it was given.
#pragma once
#include "kernels/common/image_shapes.h"
#include "nn/module.h"

namespace noeira {

class Pool2d : public Module {
 public:
  enum class Mode : uint8_t { kMax, kAvg, kGlobalAvg };
  std::string kind() const override;
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 protected:
  // stride 0: the kernel size (torch's default).
  Pool2d(Mode mode, int64_t kernel, int64_t stride, int64_t pad)
      : mode_(mode), kernel_(kernel), stride_(stride > 0 ? stride : kernel), pad_(pad) {}

 private:
  PoolShape shape(int64_t rows) const;

  Mode mode_;
  int64_t kernel_, stride_, pad_;
  PoolShape shape_;
  Slot y_, argmax_, dx_;  // (B, C, Ho, Wo) x2 (argmax int32, max only), (B, C, H, W)
  int64_t rows_ = 0;
};

class MaxPool2d : public Pool2d {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t pad = 0)
      : Pool2d(Mode::kMax, kernel, stride, pad) {}
};

class AvgPool2d : public Pool2d {
 public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t pad = 0)
      : Pool2d(Mode::kAvg, kernel, stride, pad) {}
};

// The mean of each channel's plane: average pooling with the input's (H, W) as kernel.
class GlobalAvgPool : public Pool2d {
 public:
  GlobalAvgPool() : Pool2d(Mode::kGlobalAvg, 0, 1, 0) {}
};

}  // namespace noeira
