// Sums over the ranks that train together, for the few modules whose forward needs the
// global batch: synchronised BatchNorm adds its channel statistics over the ranks, so that
// N ranks normalise as one process with the N-times batch does. The data-parallel sync
// (parallel/data_parallel_sync.h) provides it; a Context carries it (null on one process,
// where modules take their single-process path, bits unchanged).
//
// Planning: a module declares the doubles it needs in the context's cross-rank buffer
// (PlanContext::need_cross_rank_doubles); the trainer reserves one buffer of the largest
// need (Context::cross_rank_doubles), and the sync its own gather buffer (ranks x that).
#pragma once
#include <cstdint>

namespace noeira {

class CrossRankSum {
 public:
  virtual ~CrossRankSum() = default;
  // The ranks training together.
  virtual int ranks() const = 0;
  // out (n doubles) = the sum over ranks of every rank's in (n doubles), added in rank order
  // 0, 1, ..., N - 1: the same bits on every rank, whatever the engine. Both in the
  // backend's memory; n at most the planned need; out may be in. Collective (every rank
  // calls it, in the same order), enqueued on the backend's stream: no host synchronisation.
  virtual void sum(const double* in, double* out, int64_t n) = 0;
};

}  // namespace noeira
