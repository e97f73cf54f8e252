// CudaOps::dropout (contract: kernels/op_list.inc): one thread per element, its mask drawn
// from Philox (kernels/common/philox.h) keyed by the element index and the step read from
// the device counters, so results depend on neither the launch shape nor scheduling.
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// y = x * mask, the mask dropout_scale(p) where kept and 0 where dropped (torch's product:
// a dropped element is a signed zero, NaN for a non-finite x). The step is the device
// counter's, so a captured graph draws a new mask at every replay.
template <class T>
__global__ void dropout_kernel(const T* x, T* y, int64_t n, float p, uint64_t seed,
                               uint32_t layer, const StepCounters* counters) {
  const uint32_t step = static_cast<uint32_t>(counters->step);
  const float scale = dropout_scale(p);
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const bool keep = dropout_keep(seed, step, layer, static_cast<uint64_t>(i), p);
    store_f32(y[i], load_f32(x[i]) * (keep ? scale : 0.0f));
  }
}

cudaError_t launch_dropout(cudaStream_t stream, ConstView x, View y, float p, uint64_t seed,
                           uint32_t layer, const StepCounters* counters) {
  const char* op = "dropout";
  expect_elems(op, y.n, {x});
  if (y.n == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    dropout_kernel<<<grid_for(y.n), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(), y.n, p, seed,
                                                          layer, counters);
    return cudaGetLastError();
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::dropout(ConstView x, View y, float p, uint64_t seed, uint32_t layer,
                      const StepCounters* counters) {
  OpScope scope(*state_, "dropout");
  if (!(p >= 0.0f && p < 1.0f))
    return fail("the drop probability " + std::to_string(p) + " is outside [0, 1)");
  check(cuda::launch_dropout(stream_, x, y, p, seed, layer, counters), "dropout_kernel");
}

}  // namespace noeira
