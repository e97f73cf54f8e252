// Collectives over the ranks of one job (DESIGN.md section 2): an engine's — MPI between
// CPU processes (parallel/mpi_communicator.h), NCCL between GPUs — never a home-made transport.
//
// Determinism: a sum over ranks runs in an order fixed by the rank count alone, element by
// element, so the same N gives the same bits whatever the buffer is cut into (one call for
// the whole gradient, or one per bucket) and whichever ZeRO stage calls it.
//
// Memory and ordering: an engine works on the memory of the backend it is attached to
// (attach): host memory for MPI, device memory for NCCL. MPI's calls are blocking. NCCL's
// are enqueued on a communication stream that first waits for everything enqueued so far
// on the compute stream (an event, no host synchronisation); join() makes the compute
// stream wait for the collectives enqueued so far — call it before computing on what a
// collective wrote or overwriting what it reads. Buffers of host values (statistics,
// checkpoint gathers) go through host().
#pragma once
#include <cstdint>
#include <string>

#include "nn/error.h"

namespace noeira {

class Stream;

// The part of the range [first, first + count) in rank r's slice, as [lo, hi) (empty:
// lo == hi): what rank r owns of a range, for every engine.
struct RangePart {
  int64_t lo, hi;
  int64_t size() const { return hi - lo; }
};
inline RangePart part_of(int64_t r, int64_t first, int64_t count, int64_t slice) {
  const int64_t lo = first > r * slice ? first : r * slice;
  const int64_t end = first + count < (r + 1) * slice ? first + count : (r + 1) * slice;
  return {lo, end > lo ? end : lo};
}

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "MPI (Open MPI 4.1.4)", for logs and results.
  virtual std::string engine() const = 0;

  // The flat buffers below have size() * slice floats; rank r owns elements
  // [r * slice, (r + 1) * slice) (its "slice"). A call covers the range [first, first +
  // count) of such a buffer: the whole of it, or one layer's bucket (ZeRO-2/3).
  //
  // x holds the range's elements on every rank; rank r receives in own (its slice, own[0]
  // being element r * slice) the element-wise sum over ranks of the range's elements it
  // owns; own's other elements are untouched. Element order of each sum: the owner's value
  // first, then ranks r - 1, r - 2, ... (cyclically).
  virtual void reduce_scatter_sum(const float* x, int64_t first, int64_t count, float* own,
                                  int64_t slice) = 0;
  // x (the range's elements) receives every rank's elements of the range from its slice
  // own (own[0] being element r * slice); own may lie inside x (in place).
  virtual void all_gather(const float* own, float* x, int64_t first, int64_t count,
                          int64_t slice) = 0;
  // The whole buffer: x has size() * slice floats.
  void reduce_scatter_sum(const float* x, float* own, int64_t slice) {
    reduce_scatter_sum(x, 0, size() * slice, own, slice);
  }
  void all_gather(const float* own, float* x, int64_t slice) { all_gather(own, x, 0, size() * slice, slice); }
  // all (size() * bytes) = every rank's `bytes` of own, in rank order.
  virtual void all_gather_bytes(const void* own, void* all, int64_t bytes) = 0;
  // The compute stream waits for the collectives enqueued so far (nothing for MPI).
  virtual void join() {}
  // The backend (its stream) whose memory the collectives use: an Error when this engine cannot serve
  // it (MPI needs the CPU backend, NCCL the CUDA one).
  virtual Status attach(Stream& stream) = 0;
  // Device scratch the engine needs for collectives over ranges of at most `slice` floats
  // per rank (the trainer plans it and binds it before the first collective).
  virtual size_t scratch_bytes(int64_t slice) const {
    (void)slice;
    return 0;
  }
  virtual void bind_scratch(void* p) { (void)p; }
  // The communicator for host buffers (this one for MPI; NCCL's MPI bootstrap).
  virtual Communicator& host() { return *this; }

  // Host buffers (host()'s engine): v (n doubles) becomes the sum over ranks, added in rank
  // order, on every rank.
  virtual void all_sum(double* v, int64_t n) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the job with `code` (a rank that cannot go on).
  [[noreturn]] virtual void abort(int code) = 0;

  // Bytes of the collectives' buffers so far (reduce-scatter and all-gather: the range's
  // count floats each), the trainer's communication count.
  int64_t collective_bytes() const { return bytes_; }

 protected:
  int64_t bytes_ = 0;
};

}  // namespace noeira
