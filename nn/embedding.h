// Token plus learned position embedding (nanoGPT's wte + wpe): ids (B, T) int32 in [0, V)
// -> y (B, T, C) = wte[ids] + wpe[t], summed in fp32 and stored in the flow dtype (bf16
// under BF16Policy). Parameters "wte.weight" (V, C) then "wpe.weight" (context, C), both
// ParamRole::kWeight with fan_in = C, fan_out = rows (the lead's GPT init overrides them
// with normal(0, 0.02)); a sequence of T <= context positions uses wpe's first T rows.
// The ids have no gradient: backward accumulates dwte, dwpe and returns an empty tensor.
// wte() is the token table for a tied head (TiedLmHead), valid after plan().
#pragma once
#include "nn/module.h"

namespace noeira {

class Embedding : public Module {
 public:
  Embedding(int64_t vocab, int64_t width, int64_t context)
      : vocab_(vocab), width_(width), context_(context) {}
  std::string kind() const override { return "Embedding"; }
  // in: (T) int32 ids per sample; returns (T, C).
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& ids) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;
  ParamRef wte() const { return wte_; }
  int64_t vocab() const { return vocab_; }
  int64_t width() const { return width_; }

 private:
  int64_t vocab_, width_, context_;
  int64_t T_ = 0;
  ParamRef wte_, wpe_;
  Slot y_;      // (B, T, C) in the flow dtype
  Tensor ids_;  // ids of the last forward
};

}  // namespace noeira
