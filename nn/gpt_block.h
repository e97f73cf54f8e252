// nanoGPT's transformer Block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)), mlp = c_fc
// (LinearAct C -> 4C, GELU) then c_proj (Linear 4C -> C). Children are named "ln_1",
// "attn", "ln_2", "mlp" (with "mlp.c_fc", "mlp.c_proj") so parameter names and order match
// nanoGPT's state dict. Input (T, C) per sample in the flow dtype (bf16 under BF16Policy:
// the Embedding before it produces that), output the same.
#pragma once
#include <memory>

#include "nn/attention.h"
#include "nn/layernorm.h"
#include "nn/sequential.h"

namespace noeira {

class GptBlock : public Module {
 public:
  explicit GptBlock(int64_t heads, bool bias = true);
  std::string kind() const override { return "GptBlock"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  bool bias_;
  LayerNorm ln_1_, ln_2_;
  CausalSelfAttention attn_;
  std::unique_ptr<Sequential> mlp_;  // made by plan(), which knows C
  Slot y1_, y_;     // x + attn(ln_1(x)), y1 + mlp(ln_2(y1)): (B, T, C)
  Slot dy1_, dx_;   // their gradients
  Tensor x_;
};

}  // namespace noeira
