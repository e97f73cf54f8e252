// The ranks of a data-parallel run (started by mpirun): their communicators (MPI between
// processes; NCCL between GPUs, bootstrapped over MPI) and the DataParallelSync a trainer
// takes. Whatever the build has (MPI, NCCL or neither) is decided here, once, so the
// harness asks a group instead of testing build flags.
#pragma once
#include <memory>
#include <string>

#include "kernels/device.h"
#include "parallel/communicator.h"
#include "parallel/data_parallel_sync.h"

namespace noeira {

class ProcessGroup {
 public:
  // The number of ranks mpirun (Open MPI, or a PMI launcher) started, read from the
  // environment before MPI is initialised; 1 otherwise.
  static int launched_ranks();

  // This process's group when it is one of several ranks, or when `requested` (--zero
  // given: even one rank runs the data-parallel path); null for a single process. An Error
  // when the build cannot (no MPI; --target gpu without NCCL) or MPI fails to start.
  static Result<std::unique_ptr<ProcessGroup>> join(Device device, bool requested);

  ~ProcessGroup();
  int rank() const;
  int size() const;
  // The engine the trainer's collectives use ("mpi", "nccl").
  std::string engine() const;
  // The trainer's strategy over this group, ZeRO stage `zero_stage` (0 = DDP); the group
  // keeps a view of it for its figures (sync()). One per group.
  Result<std::unique_ptr<GradientSync>> make_sync(int zero_stage);
  // The strategy made by make_sync (null before).
  const DataParallelSync* sync() const { return sync_; }
  // A sum over the ranks on the host engine (collective).
  void all_sum(double* v, int64_t n);
  // Rank 0 alone prints: the others' stdout goes to /dev/null (stderr is kept).
  Status quiet_unless_first();
  // Ends every rank of the job (a rank that fails must not leave the others waiting in a
  // collective).
  [[noreturn]] void abort(int code);

 private:
  ProcessGroup() = default;
  std::unique_ptr<Communicator> host_;    // MPI
  std::unique_ptr<Communicator> device_;  // NCCL on the gpu target, else null
  const DataParallelSync* sync_ = nullptr;
  Communicator& trainer_engine() const { return device_ ? *device_ : *host_; }
};

}  // namespace noeira
