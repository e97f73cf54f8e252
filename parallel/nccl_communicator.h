// The GPU engine: NCCL (in the CUDA toolkit), one GPU per rank; built where CUDA and
// nccl.h are (NOEIRA_WITH_NCCL). The ranks are started and
// bootstrapped by the host communicator (MPI; a SingleRankCommunicator for one rank): rank
// 0's ncclUniqueId goes to every rank over it (as llm.c does), and host buffers
// (statistics, checkpoint gathers) keep using it.
//
// Collectives run on the communicator's own stream, which first waits on an event recorded
// on the compute stream (the backend's), so a bucket's exchange starts once its gradients
// are written and overlaps whatever the compute stream does next; join() makes the compute
// stream wait on the exchange's event. No host synchronisation in a step.
//
// Sum order: NCCL's reductions pick their algorithm by size, so a bucket and the whole
// buffer would differ in the last bits. reduce_scatter_sum instead exchanges the parts
// (grouped ncclSend/ncclRecv, round k receiving from rank r - k into scratch) and adds
// them with kernels/common/rank_sum.h: owner first, then r - 1, r - 2, ... as the MPI
// engine. all_gather is a group of ncclBroadcast, one per rank's part of the range.
#pragma once
#include <memory>

#include "parallel/communicator.h"

namespace noeira {

class NcclCommunicator final : public Communicator {
 public:
  // Selects this rank's GPU (its node-local rank modulo the GPUs present) before the
  // backend is made; host outlives this communicator.
  static Result<std::unique_ptr<NcclCommunicator>> create(Communicator& host);
  ~NcclCommunicator() override;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string engine() const override;
  using Communicator::all_gather;
  using Communicator::reduce_scatter_sum;
  void reduce_scatter_sum(const float* x, int64_t first, int64_t count, float* own,
                          int64_t slice) override;
  void all_gather(const float* own, float* x, int64_t first, int64_t count,
                  int64_t slice) override;
  void all_gather_bytes(const void* own, void* all, int64_t bytes) override;
  void join() override;
  // Takes the CUDA backend's stream; creates the NCCL communicator, the stream and events.
  Status attach(Stream& stream) override;
  // Rounds 1 .. N-1 of one rank's part (at most `slice` floats each).
  size_t scratch_bytes(int64_t slice) const override;
  void bind_scratch(void* p) override { scratch_ = static_cast<float*>(p); }
  Communicator& host() override { return *host_; }
  void all_sum(double* v, int64_t n) override { host_->all_sum(v, n); }
  void barrier() override { host_->barrier(); }
  [[noreturn]] void abort(int code) override;

 private:
  NcclCommunicator() = default;
  void begin();  // the communication stream waits for the compute stream
  void end();    // the exchange's event, for join()

  struct Impl;
  std::unique_ptr<Impl> impl_;
  Communicator* host_ = nullptr;
  float* scratch_ = nullptr;
};

}  // namespace noeira
