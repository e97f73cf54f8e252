// CpuOps::batch_windows (contract: kernels/op_list.inc, "Sequences"): the autoregressive
// batch of the current step, one window per row (kernels/common/batch_window.h's
// copy_batch_window, the same function as the host-batch baseline fill_batch_windows).
// OpenMP over rows; each row is a copy, so any thread count gives the same bytes.
#include <string>

#include "kernels/common/batch_window.h"
#include "kernels/cpu/cpu_ops.h"

namespace noeira {

void CpuOps::batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                           const StepCounters* counters, int64_t B, int64_t T,
                           int64_t first_row, int32_t* inputs, int32_t* targets) {
  if (B < 0 || T < 0 || first_row < 0 || n_tokens <= T)
    cpu_op_failed("batch_windows",
                  make_error("invalid shape B " + std::to_string(B) + ", T " +
                             std::to_string(T) + ", first row " + std::to_string(first_row) +
                             " over a corpus of " +
                             std::to_string(n_tokens) + " tokens (needs n_tokens > T >= 0)"));
  const uint32_t step = static_cast<uint32_t>(counters->step);
#pragma omp parallel for num_threads(threads_) schedule(static) if (B * T > 65536)
  for (int64_t r = 0; r < B; ++r)
    copy_batch_window(corpus, n_tokens, seed, step, static_cast<uint32_t>(first_row + r), T,
                      inputs + r * T, targets + r * T);
}

}  // namespace noeira
