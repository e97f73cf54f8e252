// Sums over ranks, written once for the CPU and CUDA code that adds them.
//
// rank_ordered_sum: one element of a reduce-scatter, for the CPU communicator
// (parallel/mpi_communicator.cpp, which adds each round's values as they arrive) and the
// CUDA kernel behind the NCCL one (kernels/cuda/rank_ordered_sum.cu): the owner's value
// first, then the values received in rounds 1, 2, ... (from ranks r - 1, r - 2, ...), each
// added in fp32.
//
// rank_major_sum: one element of an all-gathered (ranks, n) array of doubles (the op
// sum_over_ranks: synchronised BatchNorm's statistics), ranks 0, 1, ... in that order, so
// every rank gets the same bits.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace noeira {

// rest holds n_rest rounds of `stride` floats each; element i of round k is rest[k*stride+i].
NOEIRA_HD float rank_ordered_sum(float own, const float* rest, int64_t stride, int n_rest,
                                 int64_t i) {
  float s = own;
  for (int k = 0; k < n_rest; ++k) s += rest[k * stride + i];
  return s;
}

// all (ranks, n), rank-major: all[0 * n + i] + all[1 * n + i] + ... in double.
NOEIRA_HD double rank_major_sum(const double* all, int64_t ranks, int64_t n, int64_t i) {
  double s = all[i];
  for (int64_t r = 1; r < ranks; ++r) s += all[r * n + i];
  return s;
}

}  // namespace noeira
