// The sum over ranks of one element of a reduce-scatter, written once for the CPU
// communicator (parallel/mpi_communicator.cpp, which adds each round's values as they arrive)
// and the CUDA kernel behind the NCCL one (kernels/cuda/dist_kernels.cu): the owner's value
// first, then the values received in rounds 1, 2, ... (from ranks r - 1, r - 2, ...), each
// added in fp32.
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

}  // namespace noeira
