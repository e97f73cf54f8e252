// Linear layer y = act(x W^T + b), W: (out, in) as torch stores it. With an activation
// it is the fused LinearAct: the bias add and activation run in one pass after the GEMM
// (a cuBLASLt epilogue on the GPU where it can). GELU keeps its derivative (fp32, written
// by that pass), so its backward only multiplies; ReLU's backward reads the output.
#pragma once
#include <algorithm>

#include "kernels/common/math.h"
#include "nn/module.h"

namespace noeira {

class Linear : public Module {
 public:
  explicit Linear(int64_t out_features, Act act = Act::kNone, bool bias = true)
      : out_(out_features), act_(act), has_bias_(bias) {}
  std::string kind() const override;
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

  // Chains two layers, `before`'s output being `after`'s input, before with a GELU: after's
  // backward multiplies its dx by before's saved derivative as the GEMM writes it
  // (linear_backward_data's dact), and before's backward takes that as its dz, without
  // act_backward_saved's pass or its own dz buffer. The transformer block's MLP chains c_fc
  // to c_proj. Call before plan().
  static void chain(Linear& before, Linear& after);

 private:
  ConstView weight(const Context& ctx) const;

  int64_t in_ = 0, out_;
  Act act_;
  bool has_bias_;
  bool bf16_ = false;            // BF16Policy: bf16 GEMM inputs, bf16 activations
  DType in_dtype_ = DType::kF32;
  ParamRef weight_, bias_;
  Slot y_, dact_, dz_, dx_;  // (B, ..., out) x3 (dact_ fp32, GELU only), (B, ..., in)
  Slot x_cast_;             // (B, ..., in) bf16: an fp32 input cast at the boundary
  Tensor x_;                // input of the last forward (bf16 under BF16Policy)
  const Linear* before_ = nullptr;  // chain(): the layer whose saved derivative dx takes
  bool dy_is_dz_ = false;           // chain(): the layer after gives d(pre-activation)
};

// The fused form under its own name, for readability at call sites.
class LinearAct : public Linear {
 public:
  LinearAct(int64_t out_features, Act act, bool bias = true) : Linear(out_features, act, bias) {}
};

}  // namespace noeira
