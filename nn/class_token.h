// A ViT's class token, on the way in and on the way out.
//
// ClassToken: x (N, C) patch embeddings -> (N + 1, C) tokens: a learned class token first,
// then the patches, plus a learned position embedding (Ops::class_token_forward).
// Parameters "cls_token" (C; starts at zero, ParamRole::kBias) and "pos_embed" (N + 1, C;
// the recipe's normal init). Input and output in the flow dtype.
//
// ClassTokenPool: (T, C) -> (C), token 0 (the class token) for the head; backward puts
// the gradient back into row 0 and zeros elsewhere.
#pragma once
#include "nn/module.h"

namespace noeira {

class ClassToken : public Module {
 public:
  std::string kind() const override { return "ClassToken"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  int64_t N_ = 0, C_ = 0;
  ParamRef cls_, pos_;
  Slot y_, dx_;   // (B, N + 1, C), (B, N, C)
  Slot dcls_;     // (B, 1, C): token 0's rows of dy, summed over the batch into cls's grad
};

class ClassTokenPool : public Module {
 public:
  std::string kind() const override { return "ClassTokenPool"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  int64_t T_ = 0, C_ = 0;
  Slot y_, dx_;  // (B, C), (B, T, C)
};

}  // namespace noeira
