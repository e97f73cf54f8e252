// CpuOps' optimizers (contracts: kernels/ops.h): in place over the flat fp32 parameter,
// gradient and state arenas, with kernels/common/math.h's update, one element at a time.
#include <type_traits>

#include "kernels/cpu/cpu_ops.h"

namespace noeira {

void CpuOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                  const StepCounters* counters) {
  const AdamStepScalars s = adam_step_scalars(h, counters->step + 1);
  // One loop per weight-decay mode: branch-free bodies that vectorise.
  auto run = [&](auto decoupled, auto l2) {
#pragma omp parallel for simd num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      adam_update_mode<decltype(decoupled)::value, decltype(l2)::value>(p[i], g[i], m[i], v[i], s);
  };
  if (s.decoupled)
    run(std::true_type{}, std::false_type{});
  else if (s.weight_decay != 0.0f)
    run(std::false_type{}, std::true_type{});
  else
    run(std::false_type{}, std::false_type{});
}

void CpuOps::sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h,
                 const StepCounters* counters) {
  const SgdStepScalars s = sgd_step_scalars(h, counters->step + 1);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) sgd_update(p[i], g[i], buf[i], s);
}

}  // namespace noeira
