// Multi-head self-attention (nanoGPT's CausalSelfAttention; with causal = false a ViT
// encoder's): qkv = c_attn(x) (Linear C -> 3C), y = softmax attention per head, future
// positions masked when causal (ops.attention_forward; what it keeps for backward, fp32,
// sized by ops.attention_saved_floats: the probabilities, or CUDA bf16's per-row LSE),
// out = c_proj(y) (Linear C -> C). Input (T, C) per sample; the children are named
// "c_attn" and "c_proj" ("attn.c_attn.weight" when a block names this module "attn").
// Activations in the flow dtype (bf16 under BF16Policy), the saved attention state fp32.
#pragma once
#include <memory>

#include "nn/linear.h"

namespace noeira {

class SelfAttention : public Module {
 public:
  explicit SelfAttention(int64_t heads, bool bias = true, bool causal = true)
      : heads_(heads), bias_(bias), causal_(causal) {}
  std::string kind() const override { return "SelfAttention"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  int64_t heads_, T_ = 0, C_ = 0;
  bool bias_, causal_;
  std::unique_ptr<Linear> c_attn_, c_proj_;  // made by plan(), which knows C
  Slot y_, att_, dqkv_;  // (B, T, C) flow, attention_saved_floats fp32, (B, T, 3C) flow
  Tensor qkv_;           // c_attn's output of the last forward
};

}  // namespace noeira
