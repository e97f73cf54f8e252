// nanoGPT's CausalSelfAttention: qkv = c_attn(x) (Linear C -> 3C), y = causal softmax
// attention per head (ops.attention_forward; what it keeps for backward, fp32, sized by
// ops.attention_saved_floats: the probabilities, or CUDA bf16's per-row log-sum-exp),
// out = c_proj(y) (Linear C -> C). Input (T, C) per sample; the children are named
// "c_attn" and "c_proj" ("attn.c_attn.weight" when a block names this module "attn").
// Activations in the flow dtype (bf16 under BF16Policy), the saved attention state fp32.
#pragma once
#include <memory>

#include "nn/linear.h"

namespace noeira {

class CausalSelfAttention : public Module {
 public:
  explicit CausalSelfAttention(int64_t heads, bool bias = true)
      : heads_(heads), bias_(bias) {}
  std::string kind() const override { return "CausalSelfAttention"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  int64_t heads_, T_ = 0, C_ = 0;
  bool bias_;
  std::unique_ptr<Linear> c_attn_, c_proj_;  // made by plan(), which knows C
  Slot y_, att_, dqkv_;  // (B, T, C) flow, attention_saved_floats fp32, (B, T, 3C) flow
  Tensor qkv_;           // c_attn's output of the last forward
};

}  // namespace noeira
