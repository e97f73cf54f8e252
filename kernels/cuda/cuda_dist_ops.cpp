// CudaOps' data-parallel slice ops (contracts: kernels/ops.h; orders: dist_kernels.h).
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/dist_kernels.h"
#include "kernels/cuda/op_scope.h"

namespace noeira {

void CudaOps::slice_mean_sumsq(float* g, int64_t lo, int64_t n, float ranks,
                               const int64_t* segments, int64_t n_segments, double* sumsq) {
  OpScope scope(*this, "slice_mean_sumsq");
  if (n < 0 || lo < 0 || n_segments < 0)
    return fail("negative slice or segment count (lo " + std::to_string(lo) + ", n " +
                std::to_string(n) + ", segments " + std::to_string(n_segments) + ")");
  if (!(ranks >= 1.0f)) return fail("ranks must be at least 1");
  check(cuda::launch_slice_mean_sumsq(stream_, g, lo, n, ranks, segments, n_segments, sumsq),
        "slice_mean_sumsq kernels");
}

void CudaOps::clip_slice(float* g, int64_t n, const double* sumsq, int64_t ranks,
                         int64_t n_segments, float max_norm, float* coef) {
  OpScope scope(*this, "clip_slice");
  if (n < 0 || n_segments < 0 || ranks < 1)
    return fail("bad slice (" + std::to_string(n) + " floats, " + std::to_string(ranks) +
                " ranks, " + std::to_string(n_segments) + " segments)");
  if (!coef) return fail("no coefficient buffer");
  check(cuda::launch_clip_slice(stream_, g, n, sumsq, ranks, n_segments, max_norm, coef),
        "clip_slice kernels");
}

}  // namespace noeira
