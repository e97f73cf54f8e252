// make_cuda_backend with explicit options (tests choose TF32 on or off); kernels/backend.cpp
// calls the no-argument form, which reads NOEIRA_TF32 from the environment.
#pragma once
#include "kernels/cuda/cuda_ops.h"
#include "kernels/backend.h"

namespace noeira {

Result<Backend> make_cuda_backend(const CudaOptions& options);
Result<Backend> make_cuda_backend();

}  // namespace noeira
