// CpuOps::dropout (contract: kernels/op_list.inc): each element's Philox draw is keyed by
// its index, so the thread count changes nothing.
#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void dropout_impl(int threads, const T* x, T* y, int64_t n, float p, uint64_t seed,
                  uint32_t step, uint32_t layer) {
  const float scale = dropout_scale(p);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    // x * mask, the mask 0 or scale: torch's product, so NaN and -0 propagate alike.
    const bool keep = dropout_keep(seed, step, layer, static_cast<uint64_t>(i), p);
    store_f32(y[i], load_f32(x[i]) * (keep ? scale : 0.0f));
  }
}

}  // namespace

void CpuOps::dropout(ConstView x, View y, float p, uint64_t seed, uint32_t layer,
                     const StepCounters* counters) {
  const char* op = "dropout";
  expect_elems(op, y.n, {x});
  const uint32_t step = static_cast<uint32_t>(counters->step);
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    dropout_impl(threads_, x.as<T>(), y.as<T>(), y.n, p, seed, step, layer);
  });
}

}  // namespace noeira
