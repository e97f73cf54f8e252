// Ops written as other ops, for a backend to run as its own implementation or as the
// fallback of a fused one (the CPU runs them; CUDA falls back to them where cuBLASLt has
// no fused form). Contracts and orders: kernels/op_list.inc.
#pragma once
#include <cstdint>

#include "kernels/ops.h"

namespace noeira {

// linear_forward as gemm into y (fp32) or acc, then bias_act where a bias, an activation,
// a dact or a dtype change is left to do.
void composed_linear_forward(Ops& ops, ConstView x, ConstView W, const float* b, View y,
                             View dact, float* acc, int64_t M, int64_t N, int64_t K, Act act);

// linear_backward_data as gemm into dx (fp32) or acc, then cast into a dx that is not fp32.
void composed_linear_backward_data(Ops& ops, ConstView dz, ConstView W, View dx, float* acc,
                                   int64_t M, int64_t N, int64_t K);

// linear_backward_params as gemm accumulating dW (beta 1; overwriting it, beta 0), then
// bias_grad into db.
void composed_linear_backward_params(Ops& ops, ConstView dz, ConstView x, float* dW, float* db,
                                     int64_t M, int64_t N, int64_t K, bool overwrite_dw);

}  // namespace noeira
