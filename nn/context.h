// What a module needs at run time: the backend's ops and stream, the arenas its slots
// point into, and the device-resident step counters.
#pragma once
#include "kernels/ops.h"
#include "kernels/stream.h"
#include "nn/cross_rank_sum.h"
#include "nn/layer_hooks.h"
#include "nn/memory_plan.h"

namespace noeira {

class Context {
 public:
  Context(Ops& ops, Stream& stream, const Arenas& arenas, const Slot& counters,
          const Slot& scratch = {}, const Slot& workspace = {}, uint64_t seed = 0)
      : ops_(ops), stream_(stream), arenas_(arenas), counters_(counters), scratch_(scratch),
        workspace_(workspace), seed_(seed) {}

  Ops& ops() const { return ops_; }
  // Fills and copies, on the queue the ops run on.
  Stream& stream() const { return stream_; }
  const Arenas& arenas() const { return arenas_; }
  Device device() const { return arenas_.device(); }
  Tensor view(const Slot& s, int64_t rows = -1) const { return arenas_.view(s, rows); }
  float* f32(const Slot& s) const { return arenas_.as<float>(s); }
  StepCounters* counters() const { return arenas_.as<StepCounters>(counters_); }
  // The shared fp32 scratch planned through PlanContext::need_scratch.
  float* scratch_f32() const { return scratch_.valid() ? arenas_.as<float>(scratch_) : nullptr; }
  // The shared workspace planned through PlanContext::need_workspace (null when none).
  void* workspace() const { return workspace_.valid() ? arenas_.ptr(workspace_) : nullptr; }
  size_t workspace_bytes() const { return workspace_.bytes; }
  // Train or eval forward; set by the trainer before each.
  bool training() const { return training_; }
  void set_training(bool on) { training_ = on; }
  // The run's seed (Dropout's masks).
  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t seed) { seed_ = seed; }
  // Per-layer calls of a sharding trainer (nn/layer_hooks.h); null on one process.
  LayerHooks* hooks() const { return hooks_; }
  void set_hooks(LayerHooks* h) { hooks_ = h; }
  // Sums over the ranks (nn/cross_rank_sum.h) and the buffer planned for them
  // (PlanContext::need_cross_rank_doubles): null on one process.
  CrossRankSum* cross_rank_sum() const { return cross_rank_sum_; }
  double* cross_rank_doubles() const {
    return cross_rank_.valid() ? arenas_.as<double>(cross_rank_) : nullptr;
  }
  void set_cross_rank_sum(CrossRankSum* sum, const Slot& buffer) {
    cross_rank_sum_ = sum;
    cross_rank_ = buffer;
  }

 private:
  Ops& ops_;
  Stream& stream_;
  const Arenas& arenas_;
  Slot counters_;
  Slot scratch_;
  Slot workspace_;
  uint64_t seed_ = 0;
  bool training_ = true;
  LayerHooks* hooks_ = nullptr;
  CrossRankSum* cross_rank_sum_ = nullptr;
  Slot cross_rank_;
};

}  // namespace noeira
