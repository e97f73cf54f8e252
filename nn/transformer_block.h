// The pre-LN transformer block of GPT (nanoGPT's Block) and of a ViT encoder: x = x +
// attn(ln_1(x)); x = x + mlp(ln_2(x)), mlp = c_fc (LinearAct C -> mlp_ratio C, GELU) then
// c_proj (Linear mlp_ratio C -> C); attention causal for GPT, not for a ViT. Children are
// named "ln_1", "attn", "ln_2", "mlp" (with "mlp.c_fc", "mlp.c_proj") so parameter names
// and order match nanoGPT's state dict. Input (T, C) per sample in the flow dtype (bf16
// under BF16Policy: the Embedding or patch embedding before it produces that), output the
// same.
#pragma once
#include <memory>

#include "nn/attention.h"
#include "nn/layernorm.h"
#include "nn/sequential.h"

namespace noeira {

class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t heads, bool bias = true, bool causal = true, int64_t mlp_ratio = 4);
  std::string kind() const override { return "TransformerBlock"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  bool bias_;
  int64_t mlp_ratio_;
  LayerNorm ln_1_, ln_2_;
  SelfAttention attn_;
  std::unique_ptr<Sequential> mlp_;  // made by plan(), which knows C
  Slot y1_, y_;  // x + attn(ln_1(x)), y1 + mlp(ln_2(y1)): (B, T, C); their gradients are
                 // ln_2's and ln_1's input gradients, the residual added in their passes
  Tensor x_;
};

}  // namespace noeira
