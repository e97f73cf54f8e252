// The CPU engine: MPI (Open MPI from Debian). One MpiCommunicator per process, over
// MPI_COMM_WORLD; it initialises MPI (single-threaded: only the main thread calls it) and
// finalises it when destroyed. Collectives are blocking, on host memory.
//
// reduce_scatter_sum is built from MPI_Sendrecv so that its sum order is ours to fix
// (MPI_Reduce_scatter_block picks its algorithm by message size, which would make a
// per-bucket call and a whole-buffer call differ in the last bits): in round k = 1..N-1
// rank r sends the range's part of slice (r + k) % N to that rank and receives its own
// part from rank (r - k) % N, adding it to the running sum — owner first, then r - 1,
// r - 2, ... all_gather is MPI_Allgatherv over the range's parts.
#pragma once
#include <memory>
#include <vector>

#include "parallel/communicator.h"
#include "nn/error.h"

namespace noeira {

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI. An Error when MPI cannot start.
  static Result<std::unique_ptr<MpiCommunicator>> create();
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string engine() const override;
  using Communicator::all_gather;
  using Communicator::reduce_scatter_sum;
  void reduce_scatter_sum(const float* x, int64_t first, int64_t count, float* own,
                          int64_t slice) override;
  void all_gather(const float* own, float* x, int64_t first, int64_t count,
                  int64_t slice) override;
  void all_gather_bytes(const void* own, void* all, int64_t bytes) override;
  Status attach(Stream& stream) override;
  void all_sum(double* v, int64_t n) override;
  void barrier() override;
  [[noreturn]] void abort(int code) override;

 private:
  MpiCommunicator() = default;
  int rank_ = 0, size_ = 1;
  std::vector<float> recv_;  // one slice's part, reused
  std::vector<int> counts_, displs_;
};

}  // namespace noeira
