// CpuOps::advance (contract: kernels/op_list.inc): the step counters, in host memory.
#include "kernels/cpu/cpu_ops.h"

namespace noeira {

void CpuOps::advance(StepCounters* counters) {
  counters->step += 1;
  counters->batch_in_epoch += 1;
}

}  // namespace noeira
