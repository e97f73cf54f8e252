// CudaOps::advance (contract: kernels/op_list.inc): the step counters, on the device, by
// one thread, so a captured step replays with the next step's values.
#include "kernels/cuda/cuda_ops.h"

namespace noeira {

namespace cuda {

namespace {

__global__ void advance_kernel(StepCounters* counters) {
  counters->step += 1;
  counters->batch_in_epoch += 1;
}

cudaError_t launch_advance(cudaStream_t stream, StepCounters* counters) {
  advance_kernel<<<1, 1, 0, stream>>>(counters);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

void CudaOps::advance(StepCounters* counters) {
  OpScope scope(*state_, "advance");
  check(cuda::launch_advance(stream_, counters), "advance_kernel");
}

}  // namespace noeira
