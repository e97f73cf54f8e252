// The language-model head tied to the token embedding (nanoGPT's lm_head, weight shared
// with wte): logits (T, V) = x (T, C) . wte^T, no parameter of its own and no bias. The
// Embedding must be planned before this head (it comes first in the model), since the head
// reads its ParamRef at plan time. Forward is Linear's GEMM on the borrowed weight (its
// bf16 copy under BF16Policy); backward accumulates dwte += dlogits^T x into the
// Embedding's gradient, on top of the embedding's own scatter, and dx = dlogits . wte.
#pragma once
#include "nn/embedding.h"

namespace noeira {

class TiedLmHead : public Module {
 public:
  explicit TiedLmHead(const Embedding& embedding) : embedding_(embedding) {}
  std::string kind() const override { return "TiedLmHead"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  ConstView weight(const Context& ctx) const;

  const Embedding& embedding_;
  int64_t C_ = 0, V_ = 0;
  bool bf16_ = false;
  ParamRef wte_;
  Slot y_, dx_;   // (B, T, V) flow, (B, T, C) input dtype
  Slot x_cast_;   // (B, T, C) bf16: an fp32 input cast at the boundary
  Tensor x_;
};

}  // namespace noeira
