// CpuOps' optimizers (contracts: kernels/op_list.inc): in place over the flat fp32 parameter,
// gradient and state arenas, with kernels/common/math.h's update, one element at a time.
#include <type_traits>

#include "kernels/cpu/cpu_ops.h"

namespace noeira {

void CpuOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                  const StepCounters* counters) {
  const AdamStepScalars s = adam_step_scalars(h, counters->step + 1);
  // One loop per weight-decay mode: branch-free bodies that vectorise.
  // A decay mask (AdamW's parameter groups) picks the masked update; null keeps the plain
  // one, bit for bit.
  const float* mask = h.decay_mask;
  auto run = [&](auto decoupled, auto l2) {
    constexpr bool kDecoupled = decltype(decoupled)::value, kL2 = decltype(l2)::value;
    if (mask != nullptr && (kDecoupled || kL2)) {
#pragma omp parallel for simd num_threads(threads_) schedule(static)
      for (int64_t i = 0; i < n; ++i)
        adam_update_masked<kDecoupled, kL2>(p[i], g[i], m[i], v[i], mask[i], s);
    } else {
#pragma omp parallel for simd num_threads(threads_) schedule(static)
      for (int64_t i = 0; i < n; ++i)
        adam_update_mode<kDecoupled, kL2>(p[i], g[i], m[i], v[i], s);
    }
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
