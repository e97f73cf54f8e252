// Optimizers run over the flat parameter and gradient arenas in one launch (the
// multi-tensor form), so their cost does not grow with the number of tensors.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/math.h"
#include "nn/context.h"

namespace noeira {

enum class OptimizerKind : uint8_t { kAdam, kAdamW, kSgd };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  AdamHyper adam;  // Adam and AdamW (adam.decoupled follows kind)
  SgdHyper sgd;
};

const char* optimizer_name(OptimizerKind k);

class Optimizer {
 public:
  explicit Optimizer(OptimizerConfig cfg);
  // Reserves the state buffers, each laid out like the parameter arena.
  void plan(MemoryPlan& plan, size_t param_bytes);
  void step(Context& ctx);
  const OptimizerConfig& config() const { return cfg_; }
  // Named state buffers ("adam.m", "adam.v" / "sgd.momentum"), for checkpoints.
  std::vector<std::pair<std::string, Slot>> state() const;

 private:
  OptimizerConfig cfg_;
  int64_t n_ = 0;  // floats in the parameter arena
  Slot s0_, s1_;
};

}  // namespace noeira
