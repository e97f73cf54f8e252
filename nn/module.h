// A module plans its parameters and buffers once, then runs forward and backward on
// views into the arenas. Modules own the buffers for their output and for the
// gradient of their input; a combinator wires its children's buffers together.
#pragma once
#include <stdexcept>
#include <string>

#include "nn/amp.h"
#include "nn/context.h"
#include "nn/params.h"

namespace noeira {

// A model that cannot be planned (a kernel larger than its padded input, a shape the
// backend cannot run): thrown by a module's plan() with a message naming the module and the
// fix, and turned into an Error by whoever planned it (DatasetTrainer::create). Planning happens
// once, before anything runs, so nothing is left half-built.
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PlanContext {
  MemoryPlan& plan;
  ParamRegistry& params;
  int64_t batch = 0;              // rows every activation buffer is sized for
  bool input_needs_grad = false;  // must backward produce d(input)?
  std::string prefix;             // parameter name prefix, e.g. "fc1."
  AmpPolicy amp = NoAMP;
  DType in_dtype = DType::kF32;   // dtype of the module's input
  // Largest fp32 scratch (elements) any module needs between two ops, e.g. a bf16
  // GEMM's fp32 result before it is rounded; one shared workspace buffer serves all.
  int64_t* scratch_f32 = nullptr;
  // The backend, for plan-time queries (a convolution's algorithms and workspace), and the
  // largest such workspace (bytes): one shared buffer, bound in the Context, serves all.
  Ops* ops = nullptr;
  size_t* workspace_bytes = nullptr;
  // A second row count forward may see besides `batch` (evaluation's last partial batch;
  // 0 = none): modules that plan per shape (Conv2d) plan it too.
  int64_t tail_rows = 0;
  // Forward FLOPs of one sample (multiply-add = 2), summed by the modules that do matrix
  // products (Linear, Conv2d, the attention core, the tied head); null = not counted.
  // A training step is about 3x the forward (the backward computes two products per one).
  double* forward_flops = nullptr;
  // The largest cross-rank buffer (doubles) a module needs (nn/cross_rank_sum.h: synchronised
  // BatchNorm's channel statistics); null = not collected. Trainers over several ranks
  // reserve it; on one process nothing uses it.
  int64_t* cross_rank_doubles = nullptr;

  PlanContext child(const std::string& name, bool needs_grad, DType in) const {
    // An unnamed child shares its parent's prefix (GPT's embedding: "wte.weight").
    PlanContext c{plan, params, batch, needs_grad, name.empty() ? prefix : prefix + name + ".",
                  amp, in, scratch_f32, ops, workspace_bytes, tail_rows, forward_flops,
                  cross_rank_doubles};
    return c;
  }
  void add_flops(double f) const {
    if (forward_flops) *forward_flops += f;
  }
  void need_scratch(int64_t elems) const {
    if (scratch_f32 && elems > *scratch_f32) *scratch_f32 = elems;
  }
  void need_workspace(size_t bytes) const {
    if (workspace_bytes && bytes > *workspace_bytes) *workspace_bytes = bytes;
  }
  void need_cross_rank_doubles(int64_t n) const {
    if (cross_rank_doubles && n > *cross_rank_doubles) *cross_rank_doubles = n;
  }
  // The module being planned, for PlanError messages: "layer1.0.conv1 (Conv2d)", or just
  // the kind at the top level.
  std::string where(const std::string& kind) const {
    if (prefix.empty()) return kind;
    return prefix.substr(0, prefix.size() - 1) + " (" + kind + ")";
  }
};

class Module {
 public:
  virtual ~Module() = default;
  virtual std::string kind() const = 0;
  // Registers parameters and reserves buffers for a per-sample input shape `in`
  // (no batch dimension); returns the per-sample output shape.
  virtual Shape plan(PlanContext& pc, const Shape& in) = 0;
  // x: (rows, in...), rows <= the planned batch. Returns a view of the output buffer.
  // ctx.training() says train or eval (BatchNorm's statistics, Dropout); backward
  // follows only a training forward.
  virtual Tensor forward(Context& ctx, const Tensor& x) = 0;
  // dy: gradient of the last forward's output. Accumulates parameter gradients and
  // returns d(input), or an empty tensor when the plan said no one needs it.
  virtual Tensor backward(Context& ctx, const Tensor& dy) = 0;
  // The dtype of this module's output, known after plan(): a module declares its own,
  // combinators derive theirs from their children.
  DType out_dtype() const { return out_dtype_; }

 protected:
  DType out_dtype_ = DType::kF32;
};

}  // namespace noeira
