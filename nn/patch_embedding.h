// A ViT's patch embedding: x (C, H, W) per sample -> its N = (H/p)(W/p) non-overlapping
// p x p patches, each flattened as (c, ky, kx) (Ops::patchify) -> Linear(C p p -> width)
// -> (N, width). The same math as torch's Conv2d(C, width, p, stride=p) followed by
// flatten(2).transpose(1, 2): "weight" (width, C p p) is that convolution's weight viewed
// flat. Parameters "weight" and "bias" under the module's name ("patch_embed.weight").
// Output in the flow dtype (bf16 under BF16Policy).
#pragma once
#include <memory>

#include "nn/linear.h"

namespace noeira {

class PatchEmbedding : public Module {
 public:
  PatchEmbedding(int64_t patch, int64_t width) : patch_(patch), width_(width) {}
  std::string kind() const override { return "PatchEmbedding"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  PatchShape shape(int64_t rows) const;

  int64_t patch_, width_;
  Shape in_;                    // (C, H, W)
  std::unique_ptr<Linear> proj_;
  Slot patches_, dx_;           // (B, N, C p p), (B, C, H, W): the input's dtype
};

}  // namespace noeira
