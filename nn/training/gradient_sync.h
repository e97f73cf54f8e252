// Data parallelism as a strategy (DESIGN.md section 2b): the trainer calls its
// GradientSync at fixed points of its one step skeleton (TrainerCore::enqueue_step) and
// when it saves or loads its state. On one process that is LocalSync, which does nothing;
// over N ranks, parallel/data_parallel_sync.h (DDP, ZeRO-1/2/3 over MPI or NCCL). So every
// trainer, whatever its data, can train data-parallel, and the step is written once.
//
// Rank r of N trains rows r*B .. r*B + B - 1 of each step's global batch of N*B rows (the
// trainer asks rank() and ranks() for them), so N ranks see what one process with an
// N-times batch sees.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/ops.h"
#include "kernels/stream.h"
#include "nn/context.h"
#include "nn/cross_rank_sum.h"
#include "nn/memory_plan.h"
#include "nn/module.h"
#include "nn/training/trainer_config.h"

namespace noeira {

// What a GradientSync may see of its trainer, and plan into. The arenas, ops, stream and context
// exist only once the trainer has allocated (bind and after).
struct SyncTarget {
  const Module& model;
  const ParamRegistry& params;
  const TrainerConfig& config;
  MemoryPlan& plan;
  int64_t padded_params = 0;  // floats of the parameter and gradient arenas, padding included
  // The model's cross-rank buffer (doubles, PlanContext::need_cross_rank_doubles): the
  // largest sum a CrossRankSum will be asked for.
  int64_t cross_rank_doubles = 0;
  Arenas* arenas = nullptr;
  Ops* ops = nullptr;
  Stream* stream = nullptr;
  Context* context = nullptr;
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;

  // The ranks training together, and this process's (1 and 0 on one process).
  virtual int ranks() const = 0;
  virtual int rank() const = 0;

  // ---- Before planning: how the trainer lays out its state for this strategy. ----
  // The parameter (and gradient) arenas are padded to a multiple of this many floats, so
  // that each rank owns an equal slice.
  virtual int64_t pad_multiple() const { return 1; }
  // The optimizer keeps state for slice optimizer_slice() of pad_multiple() equal slices
  // of the arena (ZeRO), or for all of it (-1).
  virtual int64_t optimizer_slice() const { return -1; }
  // Whether the optimizer clips; false when the strategy clips the reduced gradients.
  virtual bool optimizer_clips() const { return true; }
  // Whether every parameter's gradient lives at its own offset of the one gradient arena
  // for the whole backward, so that the trainer may leave the ones their op overwrites
  // unzeroed (ParamInfo::grad_overwritten); false where the strategy moves or windows them.
  virtual bool gradients_in_place() const { return true; }
  // An Error for a configuration the strategy cannot train; checked before planning.
  virtual Status check(const TrainerConfig& cfg) const {
    (void)cfg;
    return {};
  }
  // Connects to the backend (a communicator's device resources); before planning.
  virtual Status attach(Stream& stream) {
    (void)stream;
    return {};
  }
  // Sums over the ranks for modules that need the global batch (synchronised BatchNorm,
  // nn/cross_rank_sum.h), usable from bind() on; null when there is one rank. The trainer
  // asks before planning, and when there is one it plans the model's cross-rank buffer and
  // hands both to the Context.
  virtual CrossRankSum* cross_rank_sum() { return nullptr; }

  // ---- Planning and binding. ----
  // After every buffer of the trainer is reserved: the strategy's own buffers, and it may
  // shrink the parameter and gradient arenas to what a rank keeps (MemoryPlan::set_bytes).
  virtual Status plan(SyncTarget& t) {
    (void)t;
    return {};
  }
  // Once the arenas exist, before anything is written to them.
  virtual void bind(SyncTarget& t) { (void)t; }

  // ---- The step (no host synchronisation): after the gradients are zeroed, after
  // ---- backward, after the optimizer step.
  virtual void begin_step() {}
  virtual void after_backward() {}
  virtual void after_step() {}

  // ---- Epoch ends and checkpoints. ----
  // The epoch's training loss and per-step losses over every rank (collective).
  virtual void combine_train_stats(LossStats& stats, std::vector<float>& step_losses) const {
    (void)stats;
    (void)step_losses;
  }
  // The whole parameter arena on the host, and back (a rank that keeps only its slice
  // gathers and scatters: collective).
  virtual std::vector<float> parameter_arena_host(const SyncTarget& t) const;
  virtual void set_parameter_arena(const SyncTarget& t, const std::vector<float>& whole) const;
  // Optimizer state buffer `s` as the whole arena's floats on the host, and back.
  virtual std::vector<float> optimizer_state_host(const SyncTarget& t, const Slot& s) const;
  virtual void set_optimizer_state(const SyncTarget& t, const Slot& s,
                                   const std::vector<float>& whole) const;
  // Saving: `write` writes the file (it gathers the state first); every rank calls save,
  // and a strategy decides which rank writes while the others take part in the gathering
  // (`gather`). One process: write().
  virtual Status save(const std::function<Status()>& write, const std::function<void()>& gather) const {
    (void)gather;
    return write();
  }
};

// One process: nothing to exchange.
class LocalSync final : public GradientSync {
 public:
  int ranks() const override { return 1; }
  int rank() const override { return 0; }
};

}  // namespace noeira
