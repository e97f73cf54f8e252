// One rank, host memory: every collective is a copy. The host side of a one-rank NCCL job
// (no MPI needed: the GPU bundle's [gpu] test), and a reference for the contracts.
#pragma once
#include <cstdlib>
#include <cstring>

#include "parallel/communicator.h"
#include "kernels/stream.h"

namespace noeira {

class SingleRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string engine() const override { return "one rank"; }
  using Communicator::all_gather;
  using Communicator::reduce_scatter_sum;
  void reduce_scatter_sum(const float* x, int64_t first, int64_t count, float* own,
                          int64_t slice) override {
    (void)slice;
    bytes_ += count * static_cast<int64_t>(sizeof(float));
    if (count > 0 && own + first != x) std::memmove(own + first, x, static_cast<size_t>(count) * sizeof(float));
  }
  void all_gather(const float* own, float* x, int64_t first, int64_t count, int64_t slice) override {
    (void)slice;
    bytes_ += count * static_cast<int64_t>(sizeof(float));
    if (count > 0 && own + first != x) std::memmove(x, own + first, static_cast<size_t>(count) * sizeof(float));
  }
  void all_gather_bytes(const void* own, void* all, int64_t bytes) override {
    if (own != all) std::memmove(all, own, static_cast<size_t>(bytes));
  }
  Status attach(Stream& stream) override {
    if (!stream.host_memory()) return make_error("the one-rank host communicator moves host memory");
    return {};
  }
  void all_sum(double* v, int64_t n) override {
    (void)v;
    (void)n;
  }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

}  // namespace noeira
