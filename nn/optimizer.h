// Optimizers run over the flat parameter and gradient arenas in one launch (the
// multi-tensor form), so their cost does not grow with the number of tensors.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/math.h"
#include "nn/context.h"
#include "nn/params.h"

namespace noeira {

enum class OptimizerKind : uint8_t { kAdam, kAdamW, kSgd };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  AdamHyper adam;  // Adam and AdamW (adam.decoupled follows kind)
  SgdHyper sgd;
  // Adam/AdamW: weight decay only on parameters of at least this rank (2 = matrices and
  // embeddings, not LayerNorm weights or biases: nanoGPT's two groups); 0 = every one.
  int decay_min_rank = 0;
  // Global-norm gradient clipping before the update (torch's clip_grad_norm_); 0 = none.
  double grad_clip = 0.0;
};

const char* optimizer_name(OptimizerKind k);

// The part of the flat parameter arena one optimizer updates: floats [first, first +
// count), count < 0 = all of it. ZeRO-1 gives each rank its own slice; state buffers then
// hold `count` floats, element i for arena element first + i.
struct OptimizerShard {
  int64_t first = 0;
  int64_t count = -1;
};

class Optimizer {
 public:
  // clip: whether step() clips (a data-parallel trainer clips the reduced gradients itself
  // and passes false); cfg.grad_clip stays what the recipe says.
  explicit Optimizer(OptimizerConfig cfg, OptimizerShard shard = {}, bool clip = true);
  // Reserves the state buffers, each laid out like the parameter arena, and the tables
  // the decay groups and clipping need (filled by upload_tables once allocated).
  void plan(MemoryPlan& plan, const ParamRegistry& params, Ops& ops);
  void upload_tables(Stream& stream, const Arenas& arenas, const ParamRegistry& params) const;
  // Clips (if asked), then updates every parameter; per-step values come from the counters.
  void step(Context& ctx);
  // The last step's total gradient norm before clipping (device fp32), or null without
  // clipping.
  const float* grad_norm(const Arenas& arenas) const;
  const OptimizerConfig& config() const { return cfg_; }
  // Named state buffers ("adam.m", "adam.v" / "sgd.momentum"), for checkpoints: laid out
  // like the parameter arena's floats [shard().first, shard().first + shard().count).
  std::vector<std::pair<std::string, Slot>> state() const;

 private:
  OptimizerConfig cfg_;
  OptimizerShard shard_;  // resolved by plan(): count >= 0
  bool clip_ = true;
  int64_t n_ = 0;  // floats in the parameter arena
  int64_t n_params_ = 0;
  Slot s0_, s1_;
  Slot decay_mask_;   // (n) 0/1 per element; only with decay groups
  Slot segments_;     // (n_params + 1) int64 offsets of the parameters; only with clipping
  Slot norm_, clip_ws_;
};

}  // namespace noeira
