// Collectives over the ranks of one job (DESIGN.md section 2): an engine's — MPI between
// CPU processes (dist/mpi_communicator.h), NCCL between GPUs — never a home-made transport.
//
// Determinism: a sum over ranks runs in an order fixed by the rank count alone, element by
// element, so the same N gives the same bits whatever the buffer is cut into (one call for
// the whole gradient, or one per bucket) and whichever ZeRO stage calls it.
#pragma once
#include <cstdint>
#include <string>

namespace noeira {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "MPI (Open MPI 4.1.4)", for logs and results.
  virtual std::string engine() const = 0;

  // x holds size() * slice floats on every rank; rank r receives in out (slice floats)
  // elements [r * slice, (r + 1) * slice) of the element-wise sum over ranks. Element order
  // of each sum: the owner's value first, then ranks r - 1, r - 2, ... (cyclically).
  virtual void reduce_scatter_sum(const float* x, float* out, int64_t slice) = 0;
  // out (size() * slice floats) = every rank's `slice` floats of in, in rank order.
  virtual void all_gather(const float* in, float* out, int64_t slice) = 0;
  // v (n doubles) becomes the sum over ranks, added in rank order, on every rank.
  virtual void all_sum(double* v, int64_t n) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the job with `code` (a rank that cannot go on).
  [[noreturn]] virtual void abort(int code) = 0;

  // Bytes of the collectives' buffers so far (reduce-scatter and all-gather: the whole
  // size() * slice buffer each), the trainer's communication count.
  int64_t collective_bytes() const { return bytes_; }

 protected:
  int64_t bytes_ = 0;
};

}  // namespace noeira
