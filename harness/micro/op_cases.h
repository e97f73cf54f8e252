// The op benchmarks of `noeira-bench micro` as data: for one op call of a training step
// (harness/micro/op_trace.h finds them), its name, the buffers it needs, the call and its
// work. One factory per op; each shape string starts with the dtype.
//
// Operand bytes count every operand the op reads or writes once (an accumulated output
// twice: read and written), side buffers included (argmax, attention's saved
// probabilities, statistics); FLOPs count matrix products only, 2 per multiply-add, and
// for causal attention only the products with visible keys.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/micro/micro_buffers.h"
#include "harness/micro/micro_roofline.h"
#include "kernels/ops.h"

namespace noeira {

struct OpCase {
  std::string op;     // the op of kernels/op_list.inc, e.g. "batchnorm_forward_train"
  std::string shape;  // dtype first, then the shape: "f32/B=128/C=16/S=1024"
  std::vector<BufferSpec> buffers;
  using Call = std::function<void(Ops&, const std::vector<void*>&)>;
  Call prepare;  // once on fresh buffers (a backward's saved state from its forward); may be empty
  Call call;     // the timed call
  OpWork work;
  std::string key() const { return op + "/" + shape; }
};

namespace op_case {

OpCase act_forward(int64_t n, DType dt, Act act);
OpCase act_backward(int64_t n, DType dt, Act act, bool pre, bool post);
// dy * dact, the derivative a Linear's GELU saved (fp32).
OpCase act_backward_saved(int64_t n, DType dt);
OpCase add_relu_backward(int64_t n, DType dt);
// The activation forward of a Linear layer: the CPU's linear_forward is gemm + bias_act
// (kernels/composed_ops.h), so act_forward's loop runs there. dact: the derivative saved
// too (.../dact).
OpCase bias_act(int64_t M, int64_t N, DType dt, Act act, bool bias, bool dact);
// A Linear layer's weight and bias gradients (the GEMM alone is also gemm/.../weight_grad_TN,
// as dz^T x; the CPU takes fp32 layers with N > K >= 128 as x^T dz: kernels/cpu/linear.cpp).
// `overwrite_dw` as the op takes it (a Linear's own weight: true; the tied head: false).
OpCase linear_backward_params(const Ops& ops, int64_t M, int64_t N, int64_t K, DType dt,
                              bool bias, bool overwrite_dw);
// A chained Linear layer's input gradient times the layer before's saved GELU derivative
// (linear_backward_data's dact): .../dact.
OpCase linear_backward_data_dact(int64_t M, int64_t N, int64_t K, DType dt);
// `weights`: the trainer's bf16 weight refresh (named .../weights), not a boundary cast.
OpCase cast(int64_t n, DType from, DType to, bool weights = false);
OpCase layernorm_forward(int64_t N, int64_t C, DType dt, bool beta, float eps);
OpCase layernorm_backward(const Ops& ops, int64_t N, int64_t C, DType dt, bool dx, bool dbeta,
                          bool residual = false);
OpCase batchnorm_forward_train(const Ops& ops, const NormShape& s, DType dt,
                               const BatchNormHyper& h, bool residual = false,
                               Act act = Act::kNone);
// relu: batchnorm_relu_backward (the same shape name, its own op).
OpCase batchnorm_backward(const Ops& ops, const NormShape& s, DType dt, bool dx, bool relu = false);
OpCase attention_forward(const Ops& ops, int64_t B, int64_t T, int64_t C, int64_t nh,
                         bool causal, DType dt);
OpCase attention_backward(const Ops& ops, int64_t B, int64_t T, int64_t C, int64_t nh,
                          bool causal, DType dt);
// A ViT's image to patch rows (its backward, unpatchify, runs only for an input gradient).
OpCase patchify(const PatchShape& s, DType dt);
OpCase maxpool2d_forward(const PoolShape& s, DType dt);
OpCase maxpool2d_backward(const PoolShape& s, DType dt);
OpCase avgpool2d_forward(const PoolShape& s, DType dt);
OpCase avgpool2d_backward(const PoolShape& s, DType dt);
// ResNet's option-A shortcut: subsample and pad channels, and its backward.
OpCase shortcut_forward(const ShortcutShape& s, DType dt);
OpCase shortcut_backward(const ShortcutShape& s, DType dt);
// conv2d_plan (idempotent) sizes the workspace: an Error for a shape the backend cannot run.
Result<OpCase> conv2d_forward(Ops& ops, const ConvShape& s, DType dt);
Result<OpCase> conv2d_backward_data(Ops& ops, const ConvShape& s, DType dt);
// Both backward passes with dx written through a ConvDxEpilogue (kernels/ops.h): ResNet's
// chained blocks' conv1, timed as the one op it is.
Result<OpCase> conv2d_backward_relu_grad(Ops& ops, const ConvShape& s, DType dt);
Result<OpCase> conv2d_backward_weights(Ops& ops, const ConvShape& s, DType dt);

}  // namespace op_case

}  // namespace noeira
