// DataParallelSync: a trainer over N ranks (DESIGN.md section 2), as the GradientSync its
// one step calls (nn/training/gradient_sync.h). Every family trains data-parallel this way:
// rank r trains rows r*B .. r*B + B - 1 of each step's global batch of N*B (the trainer
// asks rank() and ranks()), so N ranks see what one process with an N-times batch sees.
// The parameter and gradient arenas are one flat buffer each, padded to a multiple of N;
// rank r owns slice r.
//
// Every stage reduces gradients the same way: a reduce-scatter into the owner's slice
// (Communicator::reduce_scatter_sum: summed in an order fixed by N, whatever the buffer is
// cut into), one scale by 1/N (torch's DDP averages so), then global-norm clipping from the
// slices (each rank's per-parameter sums of squares over its slice in double, summed over
// ranks in rank order; then kernels/common/clip.h's norm and coefficient), applied to the
// slice. So the clipped gradient slices are the same bits in every stage, and the
// optimizers are element-wise:
//   stage 0 (DDP): all-gather the gradients; every rank updates every parameter
//     (communication: P reduce-scatter + P all-gather).
//   stage 1 (ZeRO-1): optimizer state only for the own slice; update it; all-gather the
//     parameters (P + P). Same parameters as DDP, bit for bit.
//   stage 2 (ZeRO-2): also the gradients sharded: a slice and per-layer bucket windows,
//     each bucket reduce-scattered when its layer's backward is done (parallel/layer_shards.h);
//     then as ZeRO-1 (P + P).
//   stage 3 (ZeRO-3): also the parameters sharded: each layer's parameters all-gathered
//     into a window before its forward and again before its backward (P + P + P); the
//     optimizer updates the slice, which is all the rank keeps.
// Synchronised BatchNorm (nn/batchnorm.h): the sync is also the CrossRankSum a Context
// carries when N > 1. A sum over ranks all-gathers every rank's doubles (rank-major, the
// engine's all_gather_bytes) and adds them in rank order 0..N-1 (Ops::sum_over_ranks), so
// every rank gets the same bits, fixed by N alone; MPI blocks, NCCL enqueues the gather on
// its communication stream and joins (no host synchronisation). Not counted in
// comm_bytes_per_step (a few KB per step, like the clipping statistics).
//
// Engines: MPI on the CPU backend, NCCL on the CUDA one (parallel/nccl_communicator.h; the
// buckets' exchanges overlap the backward on a communication stream).
//
// Checkpoints: the single-process format plus "ranks" (resuming needs the same count):
// every rank takes part in gathering the sharded state, rank 0 writes.
#pragma once
#include <memory>
#include <vector>

#include "nn/training/gradient_sync.h"
#include "parallel/communicator.h"
#include "parallel/layer_shards.h"

namespace noeira {

class DataParallelSync final : public GradientSync, public CrossRankSum {
 public:
  // comm outlives the sync (and its trainer). zero_stage: 0 (DDP), 1, 2 or 3; an Error
  // for another.
  static Result<std::unique_ptr<DataParallelSync>> create(Communicator& comm, int zero_stage);

  int ranks() const override { return comm_->size(); }  // GradientSync's and CrossRankSum's
  int rank() const override { return comm_->rank(); }
  int zero_stage() const { return zero_; }
  Communicator& communicator() const { return *comm_; }
  // The layer buckets, and from stage 2 the windows.
  const LayerShards* shards() const { return shards_.get(); }
  // Floats in the padded flat parameter buffer, and in one rank's slice of it.
  int64_t padded_params() const { return padded_; }
  int64_t slice() const { return padded_ / comm_->size(); }
  // Bytes of collective buffers the last training step moved, as the communicator counted
  // them (2P floats for stages 0, 1 and 2, 3P for stage 3); 0 before the first step.
  int64_t comm_bytes_per_step() const { return step_bytes_; }
  // Collective: an Error naming the ranks whose parameters differ from rank 0's (a hash of
  // the whole parameter arena) after `step` steps. Synchronises; for tests (`train
  // --check-replicas`).
  Status check_replicas(int64_t step) const;

  int64_t pad_multiple() const override { return comm_->size(); }
  int64_t optimizer_slice() const override { return zero_ >= 1 ? comm_->rank() : -1; }
  bool optimizer_clips() const override { return false; }  // Ops::clip_slice does it
  // ZeRO-2/3 window the gradients per bucket; every stage zeroes the whole arena as before.
  bool gradients_in_place() const override { return false; }
  Status check(const TrainerConfig& cfg) const override;
  Status attach(Stream& stream) override { return comm_->attach(stream); }
  CrossRankSum* cross_rank_sum() override { return comm_->size() > 1 ? this : nullptr; }
  void sum(const double* in, double* out, int64_t n) override;
  Status plan(SyncTarget& t) override;
  void bind(SyncTarget& t) override;
  void begin_step() override;
  void after_backward() override;
  void after_step() override;
  void combine_train_stats(LossStats& stats, std::vector<float>& step_losses) const override;
  std::vector<float> parameter_arena_host(const SyncTarget& t) const override;
  void set_parameter_arena(const SyncTarget& t, const std::vector<float>& whole) const override;
  std::vector<float> optimizer_state_host(const SyncTarget& t, const Slot& s) const override;
  void set_optimizer_state(const SyncTarget& t, const Slot& s,
                           const std::vector<float>& whole) const override;
  Status save(const std::function<Status()>& write, const std::function<void()>& gather) const override;

 private:
  DataParallelSync() = default;
  std::vector<float> whole_parameters(Stream& stream, const Arenas& arenas) const;

  Communicator* comm_ = nullptr;
  int zero_ = 0;
  float max_norm_ = 0.0f;  // the optimizer's grad_clip (0: none)
  int64_t padded_ = 0;
  int64_t bytes_before_step_ = 0, step_bytes_ = 0;  // Communicator::collective_bytes() marks
  // Parameter i covers arena floats [segments_[i], segments_[i + 1]) (gaps included).
  std::vector<int64_t> segments_;
  std::unique_ptr<LayerShards> shards_;
  // Bound at bind(): the trainer's arenas and ops.
  Arenas* arenas_ = nullptr;
  Ops* ops_ = nullptr;
  Stream* stream_ = nullptr;
  // (n_params + 1) int64 offsets; (n_params) and (N, n_params) doubles; one float; the
  // engine's scratch.
  Slot segments_slot_, sumsq_own_, sumsq_all_, coef_, comm_scratch_;
  // Cross-rank sums: (N, rank_sum_doubles_) doubles, every rank's values gathered.
  int64_t rank_sum_doubles_ = 0;
  Slot rank_gather_;
};

}  // namespace noeira
