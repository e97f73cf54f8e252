// CpuOps::sum_over_ranks (contract: kernels/op_list.inc): each element's ranks added in rank
// order (kernels/common/rank_sum.h), one element per iteration, so the thread count
// changes nothing.
#include "kernels/common/rank_sum.h"
#include "kernels/cpu/cpu_ops.h"

namespace noeira {

void CpuOps::sum_over_ranks(const double* all, int64_t ranks, int64_t n, double* out) {
#pragma omp parallel for num_threads(threads_) schedule(static) if (n > 4096)
  for (int64_t i = 0; i < n; ++i) out[i] = rank_major_sum(all, ranks, n, i);
}

}  // namespace noeira
